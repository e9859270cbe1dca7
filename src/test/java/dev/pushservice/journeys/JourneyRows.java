package dev.pushservice.journeys;

import dev.pushservice.platform.storage.Uuid7;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Journey execution rows written and read directly, for the execution worker's tests: executions as
 * an entry starts them (for what no event can start: a user without devices, a user deleted since),
 * and what the worker left in them.
 */
final class JourneyRows {

    private final JdbcClient jdbc;

    JourneyRows(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Replaces a stored version's definition, as if it had been written under other rules. */
    void overwriteDefinition(UUID journeyId, int version, String definition) {
        jdbc.sql("update journey_versions set definition = cast(:d as jsonb) where journey_id = :j and version = :v")
                .param("d", definition).param("j", journeyId).param("v", version).update();
    }

    /** Starts an execution at {@code node}, due at {@code now}, as an entry does. */
    UUID start(UUID appId, UUID journeyId, int version, UUID userId, String node, Instant now) {
        UUID id = Uuid7.at(now);
        jdbc.sql("""
                        insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                                        due_at, entered_at, updated_at)
                        values (:id, :app, :journey, :version, :user, 'active', :node, 0, :now, :now, :now)""")
                .param("id", id).param("app", appId).param("journey", journeyId).param("version", version)
                .param("user", userId).param("node", node).param("now", ts(now)).update();
        return id;
    }

    /** Starts one execution per user (version 1) in one statement; returns their ids in the users' order. */
    List<UUID> startAll(UUID appId, UUID journeyId, List<UUID> users, String node, Instant now) {
        List<UUID> ids = users.stream().map(u -> Uuid7.at(now)).toList();
        jdbc.sql("""
                        insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                                        due_at, entered_at, updated_at)
                        select x.id, :app, :journey, 1, x.user_id, 'active', :node, 0, :now, :now, :now
                        from unnest(cast(:ids as uuid[]), cast(:users as uuid[])) as x(id, user_id)""")
                .param("app", appId).param("journey", journeyId).param("node", node).param("now", ts(now))
                .param("ids", array(ids)).param("users", array(users)).update();
        return ids;
    }

    /** The journey's executions of the user. */
    List<UUID> executions(UUID journeyId, UUID userId) {
        return jdbc.sql("select id from journey_executions where journey_id = :j and user_id = :u")
                .param("j", journeyId).param("u", userId).query(UUID.class).list();
    }

    private static String array(List<UUID> ids) {
        return ids.stream().map(UUID::toString).collect(java.util.stream.Collectors.joining(",", "{", "}"));
    }

    /** status, node_id, step, due_at, ended_at, last_error, version of an execution. */
    Map<String, Object> execution(UUID id) {
        return jdbc.sql("select status, node_id, step, due_at, ended_at, last_error, version from journey_executions where id = :id")
                .param("id", id).query().singleRow();
    }

    String status(UUID executionId) {
        return (String) execution(executionId).get("status");
    }

    /** The goal nodes an execution reached. */
    List<String> goals(UUID executionId) {
        return jdbc.sql("select node_id from journey_goals where execution_id = :id order by node_id")
                .param("id", executionId).query(String.class).list();
    }

    UUID userId(UUID appId, String externalUserId) {
        return jdbc.sql("select id from users where app_id = :app and external_user_id = :ext")
                .param("app", appId).param("ext", externalUserId).query(UUID.class).single();
    }

    /** {@code n} users of the app without devices, in one statement. */
    List<UUID> users(UUID appId, int n) {
        return jdbc.sql("""
                        insert into users (id, app_id, external_user_id)
                        select gen_random_uuid(), :app, 'u' || g from generate_series(1, :n) g returning id""")
                .param("app", appId).param("n", n).query(UUID.class).list();
    }

    static OffsetDateTime ts(Instant at) {
        return OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }
}
