package dev.pushservice.journeys;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Journey rows written and read directly, for the execution worker's tests: journeys and their
 * versions (as the API would store them), executions as an entry would start them, and what the
 * worker left in them.
 */
final class JourneyRows {

    private final JdbcClient jdbc;

    JourneyRows(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** An active journey with version 1 of {@code definition} (JSON as the API stores it). */
    UUID journey(UUID appId, String definition, Instant now) {
        UUID id = UUID.randomUUID();
        jdbc.sql("""
                        insert into journeys (id, app_id, name, status, reentry_limit, current_version, trigger_type,
                                              trigger_event_name, created_at, updated_at)
                        values (:id, :app, 'test journey', 'active', 100, 1, 'custom_event', 'test', :now, :now)""")
                .param("id", id).param("app", appId).param("now", ts(now)).update();
        version(id, 1, definition, now);
        return id;
    }

    /** Adds {@code version} of the journey and makes it current. */
    void version(UUID journeyId, int version, String definition, Instant now) {
        jdbc.sql("""
                        insert into journey_versions (journey_id, version, name, status, reentry_limit, definition, created_at)
                        values (:id, :version, 'test journey', 'active', 100, cast(:definition as jsonb), :now)""")
                .param("id", journeyId).param("version", version).param("definition", definition).param("now", ts(now)).update();
        jdbc.sql("update journeys set current_version = :version, updated_at = :now where id = :id")
                .param("id", journeyId).param("version", version).param("now", ts(now)).update();
    }

    void status(UUID journeyId, String status) {
        jdbc.sql("update journeys set status = :status where id = :id").param("id", journeyId).param("status", status).update();
    }

    /** Starts an execution at {@code node}, due at {@code now}, as an entry does. */
    UUID start(UUID appId, UUID journeyId, int version, UUID userId, String node, Instant now) {
        UUID id = UUID.randomUUID();
        jdbc.sql("""
                        insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                                        due_at, entered_at, updated_at)
                        values (:id, :app, :journey, :version, :user, 'active', :node, 0, :now, :now, :now)""")
                .param("id", id).param("app", appId).param("journey", journeyId).param("version", version)
                .param("user", userId).param("node", node).param("now", ts(now)).update();
        return id;
    }

    /** Starts one execution per user in one statement; returns their ids in the users' order. */
    List<UUID> startAll(UUID appId, UUID journeyId, List<UUID> users, String node, Instant now) {
        return users.stream().map(u -> start(appId, journeyId, 1, u, node, now)).toList();
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
