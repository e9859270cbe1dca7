package dev.pushservice.journeys;

import java.time.Instant;
import java.util.List;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A journey as the API shows it: the current version's name, status, reentry limit and definition
 * ({@link JourneyDefinitions#toJson}), with the warnings of that definition (nodes that {@code start}
 * does not reach; empty when there are none).
 *
 * @param version the current version; every POST and PATCH makes one, DELETE does not
 * @param updatedAt when the current version was made, or the journey archived
 */
public record JourneyView(UUID journeyId, String name, String status, int version, int reentryLimit, JsonNode definition,
                          List<Warning> warnings, Instant createdAt, Instant updatedAt) {

    /** Something in the definition that is allowed but probably not meant: where ({@code field}) and what. */
    public record Warning(String field, String message) {
    }

    /** A journey in a list: no definition, only what it starts on. */
    public record Summary(UUID journeyId, String name, String status, int version, int reentryLimit, JsonNode trigger,
                          Instant createdAt, Instant updatedAt) {
    }

    /**
     * {@code GET …/stats}: executions per status (every status, zeros included) and goals reached per
     * goal node.
     */
    public record Stats(UUID journeyId, List<StatusTotal> executions, List<GoalTotal> goals) {
    }

    /**
     * A journey's totals as a list shows them: executions started ({@code entered}, every status),
     * running ({@code active} and {@code waiting}), completed, and goals reached (every goal node).
     */
    public record ListTotals(long entered, long running, long completed, long goals) {
        public static final ListTotals NONE = new ListTotals(0, 0, 0, 0);
    }

    public record StatusTotal(String status, long total) {
    }

    /** @param name the goal node's name in the current version, or null (none, or the node is gone) */
    public record GoalTotal(String nodeId, String name, long total) {
    }
}
