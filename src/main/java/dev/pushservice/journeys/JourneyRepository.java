package dev.pushservice.journeys;

import dev.pushservice.platform.pagination.PageRequest;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * SQL for journeys, their versions and the API's reads of executions and goals (their counts, V54).
 * Every statement filters by app, except the fold of the counts ({@link #foldCounts}), a maintenance
 * task over every app.
 */
@Repository
class JourneyRepository {

    private static final String VIEW = """
            select j.id, j.name, j.status, j.current_version, j.reentry_limit, v.definition::text as definition,
                   j.created_at, j.updated_at
            from journeys j join journey_versions v on v.journey_id = j.id and v.version = j.current_version""";

    /** The current state of a journey, with its current version's definition as stored. */
    record Row(UUID id, String name, String status, int version, int reentryLimit, JsonNode definition,
               Instant createdAt, Instant updatedAt) {
    }

    /** What the journey row holds besides its identity: the current version's values. */
    record Current(String name, String status, int reentryLimit, JourneyTrigger trigger, JsonNode definition) {
    }

    private final JdbcClient jdbc;
    private final JsonMapper json;

    JourneyRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    private static OffsetDateTime at(Instant i) {
        return i == null ? null : OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
    }

    void insert(UUID appId, UUID id, Current c, Instant now) {
        jdbc.sql("""
                        insert into journeys (id, app_id, name, status, reentry_limit, current_version, trigger_type,
                                              trigger_event_name, trigger_segment_id, created_at, updated_at)
                        values (:id, :app, :name, :status, :reentry, 1, :type, :event, :segment, :now, :now)""")
                .param("id", id).param("app", appId).param("name", c.name()).param("status", c.status())
                .param("reentry", c.reentryLimit()).param("type", triggerType(c.trigger()))
                .param("event", eventName(c.trigger())).param("segment", segmentId(c.trigger()))
                .param("now", at(now)).update();
        insertVersion(id, 1, c, now);
    }

    /** Locks the journey row for a change; empty when unknown or another app's. */
    Optional<Row> lock(UUID appId, UUID id) {
        Optional<UUID> locked = jdbc.sql("select id from journeys where app_id = :app and id = :id for update")
                .param("app", appId).param("id", id).query(UUID.class).optional();
        return locked.flatMap(x -> find(appId, id));
    }

    /**
     * Moves a journey to its next version with {@code c} as the current values and returns that
     * version; empty when unknown or another app's. Archiving sets archived_at; leaving archived clears it.
     */
    Optional<Integer> bumpVersion(UUID appId, UUID id, Current c, Instant now) {
        Optional<Integer> version = jdbc.sql("""
                        update journeys set current_version = current_version + 1, name = :name, status = :status,
                               reentry_limit = :reentry, trigger_type = :type, trigger_event_name = :event,
                               trigger_segment_id = :segment, updated_at = :now,
                               archived_at = case when :status = 'archived' then coalesce(archived_at, :now) end
                        where app_id = :app and id = :id
                        returning current_version""")
                .param("app", appId).param("id", id).param("name", c.name()).param("status", c.status())
                .param("reentry", c.reentryLimit()).param("type", triggerType(c.trigger()))
                .param("event", eventName(c.trigger())).param("segment", segmentId(c.trigger()))
                .param("now", at(now)).query(Integer.class).optional();
        version.ifPresent(v -> insertVersion(id, v, c, now));
        return version;
    }

    private void insertVersion(UUID id, int version, Current c, Instant now) {
        jdbc.sql("""
                        insert into journey_versions (journey_id, version, name, status, reentry_limit, definition, created_at)
                        values (:id, :version, :name, :status, :reentry, cast(:definition as json), :now)""")
                .param("id", id).param("version", version).param("name", c.name()).param("status", c.status())
                .param("reentry", c.reentryLimit()).param("definition", json.writeValueAsString(c.definition()))
                .param("now", at(now)).update();
    }

    /** Archives without a new version; true when this call archived it. */
    boolean archive(UUID appId, UUID id, Instant now) {
        return jdbc.sql("""
                        update journeys set status = 'archived', archived_at = :now, updated_at = :now
                        where app_id = :app and id = :id and status <> 'archived'""")
                .param("app", appId).param("id", id).param("now", at(now)).update() == 1;
    }

    /**
     * Cancels the journey's active and waiting executions and records their
     * {@code journey.execution.cancelled} facts (reason {@code journey_archived}), in ONE statement;
     * returns how many. The facts are inserted here rather than through
     * {@code LifecycleEventRepository}: an archive may cancel any number of executions, which this
     * way never pass through memory. As the lifecycle repository does for every journey fact, only when
     * the app has an enabled webhook subscribed to the kind (or {@code *}).
     */
    int cancelExecutions(UUID appId, UUID journeyId, Instant now) {
        return jdbc.sql("""
                        with old as (
                            select id, node_id from journey_executions
                            where app_id = :app and journey_id = :journey and status in ('active', 'waiting')
                            order by id
                            for update),
                        cancelled as (
                            update journey_executions e
                            set status = 'cancelled', node_id = null, ended_at = :now, updated_at = :now
                            from old where e.id = old.id
                            returning e.id, e.journey_id, e.version, e.user_id, old.node_id),
                        facts as (
                            insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
                            select :app, 'journey.execution.cancelled', c.id,
                                   jsonb_build_object('journey_id', c.journey_id, 'version', c.version, 'execution_id', c.id,
                                                      'user_id', c.user_id, 'external_user_id', u.external_user_id,
                                                      'node_id', c.node_id, 'reason', 'journey_archived'),
                                   :now
                            from cancelled c
                            left join users u on u.id = c.user_id and u.app_id = :app
                            where exists (select 1 from webhooks w
                                          where w.app_id = :app and w.enabled
                                            and ('journey.execution.cancelled' = any(w.events) or '*' = any(w.events)))
                            order by c.id)
                        select count(*) from cancelled""")
                .param("app", appId).param("journey", journeyId).param("now", at(now)).query(Integer.class).single();
    }

    /**
     * Folds the count rows (V54: each statement that changes executions or records goals adds its own)
     * into one row per key, for the keys that have more than one, dropping keys that sum to zero; rows
     * another fold holds are left for the next one. At most {@code limit} rows of each table per call;
     * returns how many rows it folded.
     */
    int foldCounts(int limit) {
        int executions = jdbc.sql("""
                        with gone as (
                            delete from journey_execution_counts c
                            where c.ctid = any(array(
                                select ctid from journey_execution_counts
                                where (journey_id, status) in (select journey_id, status from journey_execution_counts
                                                               group by 1, 2 having count(*) > 1)
                                limit :limit
                                for update skip locked))
                            returning journey_id, app_id, status, count),
                        folded as (
                            insert into journey_execution_counts (journey_id, app_id, status, count)
                            select journey_id, app_id, status, sum(count) from gone
                            group by 1, 2, 3 having sum(count) <> 0)
                        select count(*) from gone""")
                .param("limit", limit).query(Integer.class).single();
        int goals = jdbc.sql("""
                        with gone as (
                            delete from journey_goal_counts c
                            where c.ctid = any(array(
                                select ctid from journey_goal_counts
                                where (journey_id, node_id) in (select journey_id, node_id from journey_goal_counts
                                                                group by 1, 2 having count(*) > 1)
                                limit :limit
                                for update skip locked))
                            returning journey_id, app_id, node_id, count),
                        folded as (
                            insert into journey_goal_counts (journey_id, app_id, node_id, count)
                            select journey_id, app_id, node_id, sum(count) from gone
                            group by 1, 2, 3 having sum(count) <> 0)
                        select count(*) from gone""")
                .param("limit", limit).query(Integer.class).single();
        return executions + goals;
    }

    Optional<Row> find(UUID appId, UUID id) {
        return jdbc.sql(VIEW + " where j.app_id = :app and j.id = :id")
                .param("app", appId).param("id", id).query(this::row).optional();
    }

    List<JourneyView.Summary> list(UUID appId, PageRequest page) {
        return jdbc.sql("""
                        select id, name, status, current_version, reentry_limit, trigger_type, trigger_event_name,
                               trigger_segment_id, created_at, updated_at
                        from journeys where app_id = :app order by created_at desc, id desc limit :limit offset :offset""")
                .param("app", appId).param("limit", page.fetchSize()).param("offset", page.offset())
                .query(JourneyRepository::summary).list();
    }

    /**
     * The number of the journey's executions per status (statuses without executions are absent), from
     * the counts the database keeps (V54 {@code journey_execution_counts}), which outlive the rows
     * retention drops: a sum of a few rows per status, exact in the caller's snapshot (the counts change
     * in the transactions that change the executions).
     */
    Map<String, Long> executionTotals(UUID appId, UUID journeyId) {
        Map<String, Long> totals = new LinkedHashMap<>();
        jdbc.sql("""
                        select status, sum(count) from journey_execution_counts where app_id = :app and journey_id = :journey
                        group by status having sum(count) <> 0""")
                .param("app", appId).param("journey", journeyId)
                .query((rs, n) -> totals.put(rs.getString(1), rs.getLong(2))).list();
        return totals;
    }

    /**
     * The list totals of several journeys of the app in one statement, from the counts the database
     * keeps (V54; each counts table read once for all of them, on its journey index): a journey without
     * executions or goals is absent.
     */
    Map<UUID, JourneyView.ListTotals> listTotals(UUID appId, java.util.Collection<UUID> journeyIds) {
        Map<UUID, JourneyView.ListTotals> totals = new java.util.HashMap<>();
        jdbc.sql("""
                        with e as (
                            select journey_id, sum(count) as entered,
                                   coalesce(sum(count) filter (where status in ('active', 'waiting')), 0) as running,
                                   coalesce(sum(count) filter (where status = 'completed'), 0) as completed
                            from journey_execution_counts where app_id = :app and journey_id = any(:ids)
                            group by journey_id
                            having sum(count) <> 0),
                        g as (
                            select journey_id, sum(count) as goals
                            from journey_goal_counts where app_id = :app and journey_id = any(:ids)
                            group by journey_id
                            having sum(count) <> 0)
                        select coalesce(e.journey_id, g.journey_id) as journey_id, coalesce(e.entered, 0) as entered,
                               coalesce(e.running, 0) as running, coalesce(e.completed, 0) as completed,
                               coalesce(g.goals, 0) as goals
                        from e full join g on g.journey_id = e.journey_id""")
                .param("app", appId).param("ids", journeyIds.toArray(UUID[]::new))
                .query((rs, n) -> totals.put(rs.getObject("journey_id", UUID.class), new JourneyView.ListTotals(
                        rs.getLong("entered"), rs.getLong("running"), rs.getLong("completed"), rs.getLong("goals"))))
                .list();
        return totals;
    }

    /** Goals reached per node id, node ids in order, from the counts the database keeps (V54 {@code journey_goal_counts}). */
    Map<String, Long> goalTotals(UUID appId, UUID journeyId) {
        Map<String, Long> totals = new LinkedHashMap<>();
        jdbc.sql("""
                        select node_id, sum(count) from journey_goal_counts where app_id = :app and journey_id = :journey
                        group by node_id having sum(count) <> 0 order by node_id""")
                .param("app", appId).param("journey", journeyId)
                .query((rs, n) -> totals.put(rs.getString(1), rs.getLong(2))).list();
        return totals;
    }

    private Row row(ResultSet rs, int n) throws SQLException {
        return new Row(rs.getObject("id", UUID.class), rs.getString("name"), rs.getString("status"),
                rs.getInt("current_version"), rs.getInt("reentry_limit"), json.readTree(rs.getString("definition")),
                rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("updated_at").toInstant());
    }

    private static JourneyView.Summary summary(ResultSet rs, int n) throws SQLException {
        ObjectNode trigger = JsonNodeFactory.instance.objectNode();
        trigger.put("type", rs.getString("trigger_type"));
        if (rs.getString("trigger_event_name") != null) trigger.put("event_name", rs.getString("trigger_event_name"));
        UUID segment = rs.getObject("trigger_segment_id", UUID.class);
        if (segment != null) trigger.put("segment_id", segment.toString());
        return new JourneyView.Summary(rs.getObject("id", UUID.class), rs.getString("name"), rs.getString("status"),
                rs.getInt("current_version"), rs.getInt("reentry_limit"), trigger,
                rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("updated_at").toInstant());
    }

    private static String triggerType(JourneyTrigger t) {
        return switch (t) {
            case JourneyTrigger.CustomEvent e -> "custom_event";
            case JourneyTrigger.SegmentEntry s -> "segment";
        };
    }

    private static String eventName(JourneyTrigger t) {
        return t instanceof JourneyTrigger.CustomEvent e ? e.eventName() : null;
    }

    private static UUID segmentId(JourneyTrigger t) {
        return t instanceof JourneyTrigger.SegmentEntry s ? s.segmentId() : null;
    }
}
