package dev.pushservice.notifications;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * SQL for notification rows: their insert, finds and locks, state changes, final counts and report,
 * fan-out cursor and recipient count, the reconciler's and the cancel's statements, and the upkeep
 * of their count rows ({@link #foldCounts}). The fan-out's page statements are in
 * {@link FanOutPageRepository}, the reads (list, counts, recipients, preview) in
 * {@link NotificationReadRepository}. Every statement filters by app, or is keyed by a
 * notification id. Thread-safe; delivery builds one on its own pool.
 */
@Repository
class NotificationRepository {

    /** Recipient states that are final. */
    static final List<String> TERMINAL_RECIPIENT = List.of("accepted", "failed", "invalid_token", "cancelled", "expired",
            "skipped_frequency_cap");

    static final String COLUMNS = """
            id, app_id, name, status, priority, interruption_level, content::text as content, template_id,
            template_version, audience::text as audience, ttl, local_delivery_time, frequency_cap_override,
            scheduled_at, audience_at, created_at, queued_at, processing_at, finished_at, updated_at,
            fanout_cursor_at, fanout_cursor_id, recipient_count, summary::text as summary, request_hash, last_due_at""";

    private final JdbcClient jdbc;
    private final JsonMapper json;
    private final RowMapper<Row> rows;

    NotificationRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
        this.rows = rows(json);
    }

    /** A stored notification. {@code content}, {@code audience} and {@code summary} (null until terminal) as JSON. */
    record Row(UUID id, UUID appId, String name, String status, String priority, String interruptionLevel,
               JsonNode content, UUID templateId, Integer templateVersion, JsonNode audience, Integer ttl,
               String localDeliveryTime, boolean frequencyCapOverride, Instant scheduledAt, Instant audienceAt,
               Instant createdAt, Instant queuedAt, Instant processingAt, Instant finishedAt, Instant updatedAt,
               OffsetDateTime cursorAt, UUID cursorId, Integer recipientCount, JsonNode summary, byte[] requestHash,
               Instant lastDueAt) {

        boolean terminal() {
            return NotificationService.TERMINAL.contains(status);
        }
    }

    record NewNotification(UUID id, UUID appId, String idempotencyKey, byte[] requestHash, String name, String status,
                           String priority, String interruptionLevel, JsonNode content, UUID templateId,
                           Integer templateVersion, JsonNode audience, Integer ttl, String localDeliveryTime,
                           boolean frequencyCapOverride, Instant scheduledAt, Instant audienceAt, Instant createdAt,
                           Instant queuedAt, Instant processingAt) {
    }

    /**
     * Inserts unless the app already has a notification with this idempotency key. A concurrent
     * insert of the same key waits here until the other transaction ends; false when it committed
     * (or one existed already).
     */
    boolean insert(NewNotification n) {
        return jdbc.sql("""
                        insert into notifications (id, app_id, idempotency_key, request_hash, name, status, priority,
                            interruption_level, content, template_id, template_version, audience, ttl, local_delivery_time,
                            frequency_cap_override, scheduled_at, audience_at, created_at, queued_at, processing_at,
                            materialized_count, updated_at)
                        values (:id, :app, :key, :hash, :name, :status, :priority, :level, cast(:content as jsonb),
                            :template, :template_version, cast(:audience as jsonb), :ttl, :local_time, :cap_override,
                            :scheduled_at, :audience_at, :created_at, :queued_at, :processing_at,
                            case when :status = 'processing' then 0 end, :created_at)
                        on conflict (app_id, idempotency_key) do nothing
                        returning id""")
                .param("id", n.id()).param("app", n.appId()).param("key", n.idempotencyKey())
                .param("hash", n.requestHash()).param("name", n.name()).param("status", n.status())
                .param("priority", n.priority()).param("level", n.interruptionLevel())
                .param("content", json.writeValueAsString(n.content())).param("template", n.templateId())
                .param("template_version", n.templateVersion()).param("audience", json.writeValueAsString(n.audience()))
                .param("ttl", n.ttl()).param("local_time", n.localDeliveryTime())
                .param("cap_override", n.frequencyCapOverride()).param("scheduled_at", ts(n.scheduledAt()))
                .param("audience_at", ts(n.audienceAt())).param("created_at", ts(n.createdAt()))
                .param("queued_at", ts(n.queuedAt())).param("processing_at", ts(n.processingAt()))
                .query(UUID.class).optional().isPresent();
    }

    Optional<Row> findByKey(UUID appId, String key) {
        return jdbc.sql("select " + COLUMNS + " from notifications where app_id = :app and idempotency_key = :key")
                .param("app", appId).param("key", key).query(rows).optional();
    }

    Optional<Row> find(UUID appId, UUID id) {
        return jdbc.sql("select " + COLUMNS + " from notifications where app_id = :app and id = :id")
                .param("app", appId).param("id", id).query(rows).optional();
    }

    /** The row, locked against concurrent state changes until the transaction ends. */
    Optional<Row> lock(UUID appId, UUID id) {
        return jdbc.sql("select " + COLUMNS + " from notifications where app_id = :app and id = :id for update")
                .param("app", appId).param("id", id).query(rows).optional();
    }

    boolean exists(UUID appId, UUID id) {
        return jdbc.sql("select exists (select 1 from notifications where app_id = :app and id = :id)")
                .param("app", appId).param("id", id).query(Boolean.class).single();
    }

    void setStatus(UUID appId, UUID id, String status, String timestampColumn, Instant at) {
        if (!List.of("queued_at", "processing_at", "finished_at").contains(timestampColumn)) {
            throw new IllegalArgumentException(timestampColumn);
        }
        jdbc.sql("update notifications set status = :status, " + timestampColumn + " = :at, updated_at = :at"
                        + " where app_id = :app and id = :id")
                .param("status", status).param("at", ts(at)).param("app", appId).param("id", id).update();
    }

    void finish(UUID appId, UUID id, String status, Instant at, JsonNode summary) {
        jdbc.sql("""
                        update notifications set status = :status, finished_at = :at, updated_at = :at,
                               summary = cast(:summary as jsonb)
                        where app_id = :app and id = :id""")
                .param("status", status).param("at", ts(at))
                .param("summary", summary == null ? null : json.writeValueAsString(summary))
                .param("app", appId).param("id", id).update();
    }

    /** Stores the final counts of a terminal notification that has none yet (one cancelled with recipients in flight). */
    void storeSummary(UUID appId, UUID id, JsonNode summary) {
        jdbc.sql("update notifications set summary = cast(:summary as jsonb) where app_id = :app and id = :id and summary is null")
                .param("summary", json.writeValueAsString(summary)).param("app", appId).param("id", id).update();
    }

    /**
     * Stores the report page's recipient figures of a notification that just became final (its summary
     * is stored in the same transaction): what the live report reads from the notification's counts
     * ({@link NotificationReportRepository#counted(JdbcClient, UUID, UUID, long)}), grouped by the
     * timeline bucket its send from {@code start} to {@code end} gets, then one keyed update; then its
     * counts are folded into a row per key for good. Once per finished notification, never per
     * recipient; a notification with figures keeps them.
     */
    void storeReport(UUID appId, UUID id, Instant start, Instant end) {
        long bucket = NotificationPages.bucket(start, end);
        NotificationReportRepository.Outcomes outcomes = NotificationReportRepository.counted(jdbc, appId, id, bucket);
        jdbc.sql("update notifications set report = cast(:report as jsonb) where app_id = :app and id = :id and report is null")
                .param("report", json.writeValueAsString(NotificationReportRepository.toJson(outcomes, bucket)))
                .param("app", appId).param("id", id).update();
        // its summary and report are read from now on: its counts are folded once more, so they end as a
        // row per key (the recurring fold looks at unfinished notifications only)
        foldCounts(List.of(id));
    }

    /** A draft that became due and is queued now. */
    record Due(UUID id, UUID appId, String priority) {
    }

    /**
     * Moves up to {@code limit} drafts whose {@code scheduled_at} has come to {@code queued}, skipping
     * drafts another transaction holds (a concurrent sweep or cancel). One statement.
     */
    List<Due> queueDueDrafts(Instant now, int limit) {
        return jdbc.sql("""
                        update notifications n set status = 'queued', queued_at = :now, updated_at = :now
                        from (select id from notifications where status = 'draft' and scheduled_at <= :now
                              order by scheduled_at limit :limit for update skip locked) due
                        where n.id = due.id
                        returning n.id, n.app_id, n.priority""")
                .param("now", ts(now)).param("limit", limit)
                .query((rs, n) -> new Due(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class),
                        rs.getString("priority")))
                .list();
    }

    /** Keeps the latest due time given to a recipient of the notification (its expected completion). */
    void extendLastDue(UUID appId, UUID id, Instant due) {
        jdbc.sql("update notifications set last_due_at = greatest(last_due_at, :due) where app_id = :app and id = :id")
                .param("due", ts(due)).param("app", appId).param("id", id).update();
    }

    /** After a page: the cursor past its last device, and the recipients it added counted. */
    void saveCursor(UUID appId, UUID id, OffsetDateTime at, UUID deviceId, int added) {
        jdbc.sql("""
                        update notifications set fanout_cursor_at = :at, fanout_cursor_id = :device,
                                                 materialized_count = materialized_count + :added
                        where app_id = :app and id = :id""")
                .param("at", at).param("device", deviceId).param("added", added).param("app", appId).param("id", id)
                .update();
    }

    /**
     * Moves a locked, queued notification to {@code processing} at {@code at} and starts counting its
     * materialized recipients (each page adds its own: {@link #saveCursor}); returns the row as it now is.
     */
    Row startProcessing(UUID appId, UUID id, Instant at) {
        return jdbc.sql("update notifications set status = 'processing', processing_at = :at, updated_at = :at,"
                        + " materialized_count = coalesce(materialized_count, 0)"
                        + " where app_id = :app and id = :id returning " + COLUMNS)
                .param("at", ts(at)).param("app", appId).param("id", id).query(rows).single();
    }

    /**
     * Sets the recipient count once (materialization done): what the pages counted, or for a fan-out
     * that began before they counted, the recipients' rows and handover entries. Empty when it was
     * already set.
     */
    Optional<Integer> setRecipientCount(UUID appId, UUID id, Instant now) {
        return jdbc.sql("""
                        update notifications set updated_at = :now,
                               recipient_count = coalesce(materialized_count,
                                   (select count(*) from notification_recipients where notification_id = :id)
                                   + (select coalesce(sum(cardinality(b.device_ids)), 0) from notification_recipient_batches b
                                      where b.notification_id = :id)
                                   + (select coalesce(sum(o.handed - o.recorded), 0) from notification_handovers o
                                      where o.notification_id = :id))
                        where app_id = :app and id = :id and recipient_count is null
                        returning recipient_count""")
                .param("now", ts(now)).param("app", appId).param("id", id).query(Integer.class).optional();
    }

    /** A notification the reconciler looks at. */
    record Unfinished(UUID id, UUID appId) {
    }

    /**
     * Up to {@code limit} processing notifications whose recipients are all materialized and terminal,
     * no handover left: their finishing was missed (the reconciler). One index range over unfinished
     * notifications, two index probes each.
     */
    List<Unfinished> finishedUnmarked(int limit) {
        return jdbc.sql("""
                        select n.id, n.app_id from notifications n
                        where n.status = 'processing' and n.recipient_count is not null
                          and not exists (select 1 from notification_recipients r
                                          where r.notification_id = n.id and r.status in ('pending', 'sending'))
                          and not exists (select 1 from notification_handovers o where o.notification_id = n.id)
                        limit :limit""")
                .param("limit", limit)
                .query((rs, n) -> new Unfinished(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class)))
                .list();
    }

    /**
     * Up to {@code limit} cancelled notifications still without their final counts (recipients were in
     * flight at the cancel) with nothing left in flight: storing their counts was missed.
     */
    List<Unfinished> cancelledUncounted(int limit) {
        return jdbc.sql("""
                        select n.id, n.app_id from notifications n
                        where n.status = 'cancelled' and n.summary is null
                          and not exists (select 1 from notification_recipients r
                                          where r.notification_id = n.id and r.status in ('pending', 'sending'))
                          and not exists (select 1 from notification_handovers o where o.notification_id = n.id)
                        limit :limit""")
                .param("limit", limit)
                .query((rs, n) -> new Unfinished(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class)))
                .list();
    }

    /**
     * Up to {@code limit} queued or processing notifications whose fan-out task ({@code task}) was
     * dead-lettered and is not scheduled again, with nothing of what it materialized left in flight.
     */
    List<Unfinished> fanOutDeadLettered(String task, int limit) {
        return jdbc.sql("""
                        select n.id, n.app_id from notifications n
                        where n.status in ('queued', 'processing') and n.recipient_count is null
                          and exists (select 1 from dead_letter_jobs j where j.task_name = :task and j.task_instance = n.id::text)
                          and not exists (select 1 from scheduled_tasks t where t.task_name = :task and t.task_instance = n.id::text)
                          and not exists (select 1 from notification_recipients r
                                          where r.notification_id = n.id and r.status in ('pending', 'sending'))
                          and not exists (select 1 from notification_handovers o where o.notification_id = n.id)
                        limit :limit""")
                .param("task", task).param("limit", limit)
                .query((rs, n) -> new Unfinished(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class)))
                .list();
    }

    /** Whether the notification has a recipient pending or sending, or a handover (through their indexes). */
    boolean hasWorkLeft(UUID id) {
        return jdbc.sql("""
                        select exists (select 1 from notification_recipients r
                                       where r.notification_id = :id and r.status in ('pending', 'sending'))
                            or exists (select 1 from notification_handovers o where o.notification_id = :id)""")
                .param("id", id).query(Boolean.class).single();
    }

    /** Pending recipients (not handed to a provider) become cancelled; returns how many. */
    int cancelPending(UUID appId, UUID id, Instant now) {
        return jdbc.sql("""
                        update notification_recipients set status = 'cancelled', updated_at = :now
                        where notification_id = :id and app_id = :app and status = 'pending'""")
                .param("now", ts(now)).param("id", id).param("app", appId).update();
    }

    /**
     * Folds the count rows of {@code ids} into one row per key (V46: each statement that changes
     * recipients adds its own), dropping keys that sum to zero; rows another fold holds are left for
     * the next one. Two statements whatever the number of rows.
     */
    void foldCounts(Collection<UUID> ids) {
        if (ids.isEmpty()) return;
        UUID[] array = ids.toArray(UUID[]::new);
        jdbc.sql("""
                        with gone as (
                            delete from notification_counts c
                            where c.ctid = any(array(select ctid from notification_counts
                                                     where notification_id = any(:ids) for update skip locked))
                            returning notification_id, app_id, platform, status, reason, count)
                        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
                        select notification_id, app_id, platform, status, reason, sum(count) from gone
                        group by 1, 2, 3, 4, 5 having sum(count) <> 0""")
                .param("ids", array).update();
        jdbc.sql("""
                        with gone as (
                            delete from notification_accepted_counts c
                            where c.ctid = any(array(select ctid from notification_accepted_counts
                                                     where notification_id = any(:ids) for update skip locked))
                            returning notification_id, app_id, second, count)
                        insert into notification_accepted_counts (notification_id, app_id, second, count)
                        select notification_id, app_id, second, sum(count) from gone
                        group by 1, 2, 3 having sum(count) <> 0""")
                .param("ids", array).update();
    }

    /** The notifications whose counts are read live: queued or processing, or cancelled without their summary yet. */
    List<UUID> countedLive() {
        return jdbc.sql("""
                        select id from notifications where status in ('queued', 'processing')
                        union all
                        select id from notifications where status = 'cancelled' and summary is null""")
                .query(UUID.class).list();
    }

    /** Maps a row of {@link #COLUMNS}. */
    static RowMapper<Row> rows(JsonMapper json) {
        return (rs, n) -> row(json, rs);
    }

    private static Row row(JsonMapper json, ResultSet rs) throws SQLException {
        String summary = rs.getString("summary");
        return new Row(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class), rs.getString("name"),
                rs.getString("status"), rs.getString("priority"), rs.getString("interruption_level"),
                json.readTree(rs.getString("content")), rs.getObject("template_id", UUID.class),
                (Integer) rs.getObject("template_version"), json.readTree(rs.getString("audience")),
                (Integer) rs.getObject("ttl"), rs.getString("local_delivery_time"), rs.getBoolean("frequency_cap_override"),
                instant(rs, "scheduled_at"), instant(rs, "audience_at"), instant(rs, "created_at"), instant(rs, "queued_at"),
                instant(rs, "processing_at"), instant(rs, "finished_at"), instant(rs, "updated_at"),
                rs.getObject("fanout_cursor_at", OffsetDateTime.class), rs.getObject("fanout_cursor_id", UUID.class),
                (Integer) rs.getObject("recipient_count"), summary == null ? null : json.readTree(summary),
                rs.getBytes("request_hash"), instant(rs, "last_due_at"));
    }

    /**
     * As {@code OffsetDateTime}, never {@code java.sql.Timestamp}: a {@code Timestamp} goes through the
     * Julian calendar before 1582, so an early {@code scheduled_at} (past-dated sends may carry any year
     * from 0001) read back days away from the instant the create answered.
     */
    static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    static OffsetDateTime ts(Instant at) {
        return at == null ? null : OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }
}
