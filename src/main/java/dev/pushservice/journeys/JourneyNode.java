package dev.pushservice.journeys;

import dev.pushservice.segments.Filter;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * One node of a journey (spec "Node types"). Each record holds the values the spec requires, already
 * validated; {@code next}, {@code yes}, {@code no} and a split branch's {@code next} name nodes of the
 * same definition.
 */
public sealed interface JourneyNode {

    /** Pauses the execution for {@code seconds} (1 second to 31 days). */
    record Wait(long seconds, String next) implements JourneyNode {
    }

    /** Pauses until {@code at} (already past: goes on at once). */
    record WaitUntil(Instant at, String next) implements JourneyNode {
    }

    /**
     * Follows {@code yes} when the filter (segment grammar) matches the user's current data (any of
     * the user's devices), else {@code no}. {@code filterJson} is its canonical form (what reads return).
     */
    record Branch(Filter filter, JsonNode filterJson, String yes, String no) implements JourneyNode {
    }

    /** A stable percentage choice per user; weights are positive and total 100. */
    record Split(List<SplitBranch> branches) implements JourneyNode {
        public Split {
            branches = List.copyOf(branches);
        }
    }

    /** One way out of a {@link Split}. */
    record SplitBranch(int weight, String next) {
    }

    /**
     * Sends a push to the user's devices through the notification pipeline. {@code content} is the
     * validated {@code content} object ({@code title} and {@code body} required; its other fields as
     * the definition reader documents); {@code priority} and {@code interruptionLevel} are null when
     * not given (the notification defaults then apply).
     */
    record Push(JsonNode content, String title, String body, String priority, String interruptionLevel, String next)
            implements JourneyNode {
    }

    /** Queues a signed delivery to one webhook endpoint of the app. */
    record Webhook(UUID webhookId, String next) implements JourneyNode {
    }

    /**
     * Records that the execution reached this goal; {@code name} is an optional label for stats.
     * {@code next} is optional: without it the execution completes here.
     */
    record Goal(String name, String next) implements JourneyNode {
    }

    /** Ends the execution as {@code completed}. */
    record Exit() implements JourneyNode {
    }
}
