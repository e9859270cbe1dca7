package dev.pushservice.journeys;

import dev.pushservice.segments.FilterCompiler;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The execution worker's SQL: claim due executions, read the versions they run, evaluate a branch
 * filter for a batch's users, record goals and write every execution's new state. Each statement
 * covers a whole batch (no statement per execution). The claim and the writes work across apps by
 * execution id; the branch read filters by app. Reads {@code users} and {@code devices} (never
 * writes them) as {@link FilterCompiler}'s output requires, like the notification audience does.
 * Thread-safe.
 */
@Repository
class JourneyExecutionRepository {

    private final JdbcClient jdbc;
    private final JsonMapper json;

    JourneyExecutionRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    /**
     * A claimed execution. {@code userExists} false: its user was deleted meanwhile;
     * {@code externalUserId} may be null (a user without one).
     */
    record Claimed(UUID id, UUID appId, UUID journeyId, int version, UUID userId, String nodeId, int step,
                   boolean userExists, String externalUserId) {
    }

    /**
     * Locks up to {@code limit} due executions ({@code active} or {@code waiting}, {@code due_at} at or
     * before {@code now}) of active journeys, skipping rows another worker holds. A paused or draft
     * journey's executions are not claimed (they keep their place and timer) and are never read: the
     * claim starts from the active journeys and reads each one's due executions oldest first through
     * {@code journey_executions_journey_due_idx} (V29), locking rows only as they are taken. Journeys
     * are visited in a random order on each claim, so a journey with a large backlog cannot keep
     * another's due executions waiting for more than a few batches.
     */
    List<Claimed> claim(Instant now, int limit) {
        return jdbc.sql("""
                        select e.id, e.app_id, e.journey_id, e.version, e.user_id, e.node_id, e.step,
                               u.id is not null as user_exists, u.external_user_id
                        from (select t.*
                              from (select id from journeys where status = 'active' order by random()) j
                              cross join lateral (
                                  select x.id, x.app_id, x.journey_id, x.version, x.user_id, x.node_id, x.step
                                  from journey_executions x
                                  where x.journey_id = j.id and x.status in ('active', 'waiting') and x.due_at <= :now
                                  order by x.due_at
                                  limit :limit
                                  for update skip locked) t
                              limit :limit) e
                        left join users u on u.id = e.user_id and u.app_id = e.app_id""")
                .param("now", ts(now)).param("limit", limit)
                .query((rs, n) -> new Claimed(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class),
                        rs.getObject("journey_id", UUID.class), rs.getInt("version"), rs.getObject("user_id", UUID.class),
                        rs.getString("node_id"), rs.getInt("step"), rs.getBoolean("user_exists"),
                        rs.getString("external_user_id")))
                .list();
    }

    /**
     * An execution {@link #failOne} ended: {@code nodeId} where it stood, {@code externalUserId} null
     * when its user has none (or is gone).
     */
    record Ended(UUID id, UUID appId, UUID journeyId, int version, UUID userId, String externalUserId, String nodeId) {
    }

    /** Ends one active or waiting execution as failed; empty when it had ended meanwhile. */
    Optional<Ended> failOne(UUID execution, String error, Instant now) {
        return jdbc.sql("""
                        with old as (
                            select id, node_id from journey_executions
                            where id = :id and status in ('active', 'waiting')
                            for update),
                        ended as (
                            update journey_executions e
                            set status = 'failed', node_id = null, due_at = null, ended_at = :now, updated_at = :now,
                                last_error = :error
                            from old where e.id = old.id
                            returning e.id, e.app_id, e.journey_id, e.version, e.user_id, old.node_id)
                        select d.id, d.app_id, d.journey_id, d.version, d.user_id, u.external_user_id, d.node_id
                        from ended d left join users u on u.id = d.user_id and u.app_id = d.app_id""")
                .param("id", execution).param("error", error).param("now", ts(now))
                .query((rs, n) -> new Ended(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class),
                        rs.getObject("journey_id", UUID.class), rs.getInt("version"), rs.getObject("user_id", UUID.class),
                        rs.getString("external_user_id"), rs.getString("node_id")))
                .optional();
    }

    /** A version of a journey. */
    record VersionKey(UUID journeyId, int version) {
    }

    /** The stored definitions (JSON text) of these versions, in one statement. */
    Map<VersionKey, String> definitions(Collection<VersionKey> keys) {
        if (keys.isEmpty()) return Map.of();
        String ids = keys.stream().map(k -> k.journeyId().toString()).collect(Collectors.joining(",", "{", "}"));
        String versions = keys.stream().map(k -> Integer.toString(k.version())).collect(Collectors.joining(",", "{", "}"));
        Map<VersionKey, String> out = new java.util.HashMap<>();
        jdbc.sql("""
                        select v.journey_id, v.version, v.definition::text as definition
                        from journey_versions v
                        join unnest(cast(:ids as uuid[]), cast(:versions as int[])) as k(journey_id, version)
                          on v.journey_id = k.journey_id and v.version = k.version""")
                .param("ids", ids).param("versions", versions)
                .query((rs, n) -> out.put(new VersionKey(rs.getObject("journey_id", UUID.class), rs.getInt("version")),
                        rs.getString("definition")))
                .list();
        return out;
    }

    /**
     * Which of {@code users} have at least one enabled, non-invalidated device of the app that the
     * compiled filter selects now. One statement; call inside a transaction (compiled filters run
     * with {@link FilterCompiler#WORK_MEM}).
     */
    Set<UUID> usersMatching(UUID appId, FilterCompiler.Compiled filter, Collection<UUID> users) {
        if (users.isEmpty()) return Set.of();
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        return new HashSet<>(jdbc.sql("select distinct d.user_id from devices d " + filter.joins()
                        + " where d.app_id = :app and d.enabled and d.invalidated_at is null"
                        + " and d.user_id = any(cast(:j_users as uuid[])) and (" + filter.predicate() + ")")
                .param("app", appId).param("j_users", uuidArray(users)).params(filter.params())
                .query((rs, n) -> rs.getObject(1, UUID.class)).list());
    }

    /** A goal reached by an execution. */
    record Goal(UUID executionId, String nodeId, UUID appId, UUID journeyId) {
    }

    /**
     * Records goals reached (once per execution and goal node), in one statement; returns the goals
     * recorded now (not those an execution had reached before, nor a second reach in the same list).
     */
    Set<Goal> insertGoals(List<Goal> goals, Instant at) {
        if (goals.isEmpty()) return Set.of();
        ArrayNode rows = JsonNodeFactory.instance.arrayNode();
        for (Goal g : goals) {
            rows.addObject().put("execution_id", g.executionId().toString()).put("node_id", g.nodeId())
                    .put("app_id", g.appId().toString()).put("journey_id", g.journeyId().toString());
        }
        return jdbc.sql("""
                        insert into journey_goals (execution_id, node_id, app_id, journey_id, reached_at)
                        select g.execution_id, g.node_id, g.app_id, g.journey_id, :at
                        from jsonb_to_recordset(cast(:rows as jsonb)) as g(execution_id uuid, node_id text, app_id uuid, journey_id uuid)
                        on conflict (execution_id, node_id) do nothing
                        returning execution_id, node_id, app_id, journey_id""")
                .param("rows", json.writeValueAsString(rows)).param("at", ts(at))
                .query((rs, n) -> new Goal(rs.getObject("execution_id", UUID.class), rs.getString("node_id"),
                        rs.getObject("app_id", UUID.class), rs.getObject("journey_id", UUID.class)))
                .set();
    }

    /**
     * An execution's state after a batch. {@code dueAt} null for an ended one; {@code error} null
     * keeps the last one recorded.
     */
    record Outcome(UUID id, String status, String nodeId, int step, Instant dueAt, Instant endedAt, String error) {
    }

    /** Writes every execution's new state in one statement. */
    void update(List<Outcome> outcomes, Instant now) {
        if (outcomes.isEmpty()) return;
        ArrayNode rows = JsonNodeFactory.instance.arrayNode();
        for (Outcome o : outcomes) {
            ObjectNode row = rows.addObject().put("id", o.id().toString()).put("status", o.status())
                    .put("node_id", o.nodeId()).put("step", o.step())
                    .put("due_at", o.dueAt() == null ? null : o.dueAt().toString())
                    .put("ended_at", o.endedAt() == null ? null : o.endedAt().toString());
            row.put("error", o.error());
        }
        jdbc.sql("""
                        update journey_executions e
                        set status = u.status, node_id = u.node_id, step = u.step, due_at = u.due_at,
                            ended_at = u.ended_at, last_error = coalesce(u.error, e.last_error), updated_at = :now
                        from jsonb_to_recordset(cast(:rows as jsonb))
                             as u(id uuid, status text, node_id text, step int, due_at timestamptz, ended_at timestamptz, error text)
                        where e.id = u.id""")
                .param("rows", json.writeValueAsString(rows)).param("now", ts(now)).update();
    }

    private static String uuidArray(Collection<UUID> ids) {
        return ids.stream().map(UUID::toString).collect(Collectors.joining(",", "{", "}"));
    }

    private static OffsetDateTime ts(Instant at) {
        return at == null ? null : OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }
}
