package dev.pushservice.notifications;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The statements behind the dashboard's report and recipient pages ({@link NotificationPages}): each
 * is one {@code GROUP BY} (or one keyed read) over a notification's counts (V46), its events, or, for a
 * notification finished before its figures were stored, its recipients; never a statement per
 * recipient. Recipients are read through {@code notification_recipient_states} (the
 * ones handed to a lane and not recorded yet count as {@code sending}, as the API shows them); events
 * through {@code events_notification_idx} (app, notification, occurred_at). Reads the
 * {@code events} table of the events feature for the engagement figures: a report is the one place
 * both meet, and joining them in SQL keeps it one statement.
 */
@Repository
class NotificationReportRepository {

    /** Most recipient rows the per-recipient page reads for one user (their devices). */
    static final int RECIPIENT_LIMIT = 50;
    /** Most earlier attempts the per-recipient page reads. */
    static final int ATTEMPT_LIMIT = 200;
    /** Most events the per-recipient page reads. */
    static final int EVENT_LIMIT = 200;
    /** The event types the report counts. */
    static final List<String> ENGAGEMENT = List.of("received", "confirmed_delivered", "delivered", "opened", "clicked");

    private final JdbcClient jdbc;
    private final JsonMapper json;

    NotificationReportRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    /** @param reason the recipient's {@code last_error} (null for none) */
    record Outcome(String platform, String status, String reason, long count) {
    }

    /**
     * @param outcomes recipients per platform, state and last reason code
     * @param accepted recipients accepted per {@code bucket} seconds, by when their acceptance was
     *                 recorded ({@code updated_at}): [bucket start in epoch seconds, count], oldest first
     */
    record Outcomes(List<Outcome> outcomes, List<long[]> accepted) {
    }

    /**
     * The recipients' figures in one read of the notification's recipient rows: per platform, state
     * and reason, and (a second grouping set) accepted per time bucket.
     */
    Outcomes outcomes(UUID appId, UUID id, long bucket) {
        return outcomes(jdbc, appId, id, bucket);
    }

    /**
     * {@link #outcomes(UUID, UUID, long)} on {@code jdbc} (either pool): the statement the live report
     * runs is the one whose result is stored when a notification finishes ({@link NotificationRepository#storeReport}).
     */
    static Outcomes outcomes(JdbcClient jdbc, UUID appId, UUID id, long bucket) {
        List<Outcome> outcomes = new java.util.ArrayList<>();
        java.util.TreeMap<Long, Long> accepted = new java.util.TreeMap<>();
        jdbc.sql("""
                        select platform, status, last_error, t, count(*) as n, count(*) filter (where status = 'accepted') as accepted,
                               grouping(platform, status, last_error) as by_time
                        from (select platform, status, last_error,
                                     floor(extract(epoch from updated_at) / :bucket)::bigint * :bucket as t
                              from notification_recipient_states
                              where app_id = :app and notification_id = :id) r
                        group by grouping sets ((platform, status, last_error), (t))""")
                .param("app", appId).param("id", id).param("bucket", bucket)
                .query((rs, n) -> {
                    if (rs.getInt("by_time") == 0) {
                        outcomes.add(new Outcome(rs.getString("platform"), rs.getString("status"), rs.getString("last_error"), rs.getLong("n")));
                    } else if (rs.getLong("accepted") > 0) {
                        accepted.put(rs.getLong("t"), rs.getLong("accepted"));
                    }
                    return null;
                })
                .list();
        return new Outcomes(outcomes, accepted.entrySet().stream().map(e -> new long[] {e.getKey(), e.getValue()}).toList());
    }

    /**
     * The recipients' figures as {@link #outcomes(UUID, UUID, long)} reads them from the rows, from the
     * counts the database keeps instead (V46 {@code notification_counts}, {@code notification_accepted_counts}):
     * two sums over a handful of rows, whatever the audience. Null when the notification has no counts:
     * it finished before they were kept (then only its rows tell), or it has no recipients.
     */
    Outcomes counted(UUID appId, UUID id, long bucket) {
        Outcomes outcomes = counted(jdbc, appId, id, bucket);
        return outcomes.outcomes().isEmpty() ? null : outcomes;
    }

    /** {@link #counted(UUID, UUID, long)} on {@code jdbc} (either pool), empty instead of null. */
    static Outcomes counted(JdbcClient jdbc, UUID appId, UUID id, long bucket) {
        List<Outcome> outcomes = jdbc.sql("""
                        select platform, status, reason, sum(count) as n from notification_counts
                        where app_id = :app and notification_id = :id
                        group by platform, status, reason having sum(count) <> 0""")
                .param("app", appId).param("id", id)
                .query((rs, n) -> new Outcome(rs.getString("platform"), rs.getString("status"), rs.getString("reason"), rs.getLong("n")))
                .list();
        List<long[]> accepted = jdbc.sql("""
                        select second / :bucket * :bucket as t, sum(count) as n from notification_accepted_counts
                        where app_id = :app and notification_id = :id
                        group by 1 having sum(count) > 0 order by 1""")
                .param("app", appId).param("id", id).param("bucket", bucket)
                .query((rs, n) -> new long[] {rs.getLong("t"), rs.getLong("n")})
                .list();
        return new Outcomes(outcomes, accepted);
    }

    /** The outcomes stored when the notification finished, and the bucket width they were grouped by. */
    record Stored(Outcomes outcomes, long bucket) {
    }

    /**
     * The figures stored in {@code notifications.report} when the notification finished (V39), or
     * null: not finished yet, or finished before they were stored. One keyed read.
     */
    Stored stored(UUID appId, UUID id) {
        String text = jdbc.sql("select report::text from notifications where app_id = :app and id = :id")
                .param("app", appId).param("id", id).query(String.class).optional().orElse(null);
        if (text == null) return null;
        JsonNode report = json.readTree(text);
        List<Outcome> outcomes = new java.util.ArrayList<>();
        for (JsonNode o : report.path("outcomes")) {
            outcomes.add(new Outcome(o.get(0).stringValue(), o.get(1).stringValue(), o.get(2).isNull() ? null : o.get(2).stringValue(),
                    o.get(3).longValue()));
        }
        List<long[]> accepted = new java.util.ArrayList<>();
        for (JsonNode b : report.path("accepted")) accepted.add(new long[] {b.get(0).longValue(), b.get(1).longValue()});
        return new Stored(new Outcomes(outcomes, accepted), report.path("bucket").longValue());
    }

    /** {@code outcomes} as {@code notifications.report} stores them (see {@link #stored}). */
    static JsonNode toJson(Outcomes outcomes, long bucket) {
        ObjectNode report = JsonNodeFactory.instance.objectNode().put("bucket", bucket);
        ArrayNode list = report.putArray("outcomes");
        for (Outcome o : outcomes.outcomes()) list.addArray().add(o.platform()).add(o.status()).add(o.reason()).add(o.count());
        ArrayNode accepted = report.putArray("accepted");
        for (long[] b : outcomes.accepted()) accepted.addArray().add(b[0]).add(b[1]);
        return report;
    }

    /**
     * @param eventType null on the per-platform total row, whose {@code engagedDevices} counts the
     *                  devices with an {@code opened} or {@code clicked} event
     */
    record Engagement(String platform, String eventType, long count, long engagedDevices) {
    }

    /**
     * Engagement events per platform and type, and per platform the devices that opened or clicked,
     * in one statement (grouping sets). The platform is the recipient's; an event of a device that
     * was no recipient counts under {@code unknown}.
     */
    List<Engagement> engagement(UUID appId, UUID id) {
        return jdbc.sql("""
                        select coalesce(r.platform, 'unknown') as platform, e.event_type, count(*) as n,
                               count(distinct e.device_id) filter (where e.event_type in ('opened', 'clicked')) as engaged,
                               grouping(e.event_type) as total_row
                        from events e
                        left join lateral (
                            select r.platform from notification_recipients r
                            where r.notification_id = e.notification_id and r.device_id = e.device_id
                            union all
                            select b.platform from notification_recipient_batches b
                            where b.notification_id = e.notification_id and b.device_ids @> array[e.device_id]
                            limit 1) r on true
                        where e.app_id = :app and e.notification_id = :id and e.event_type in (:types)
                        group by grouping sets ((coalesce(r.platform, 'unknown'), e.event_type), (coalesce(r.platform, 'unknown')))""")
                .param("app", appId).param("id", id).param("types", ENGAGEMENT)
                .query((rs, n) -> rs.getInt("total_row") == 1
                        ? new Engagement(rs.getString("platform"), null, rs.getLong("n"), rs.getLong("engaged"))
                        : new Engagement(rs.getString("platform"), rs.getString("event_type"), rs.getLong("n"), 0))
                .list();
    }

    /** Opened and clicked events per hour of {@code occurred_at}: [hour in epoch seconds, opened, clicked], oldest first. */
    List<long[]> opensPerHour(UUID appId, UUID id) {
        return jdbc.sql("""
                        select extract(epoch from date_trunc('hour', occurred_at))::bigint as h,
                               count(*) filter (where event_type = 'opened') as opened,
                               count(*) filter (where event_type = 'clicked') as clicked
                        from events
                        where app_id = :app and notification_id = :id and event_type in ('opened', 'clicked')
                        group by 1 order by 1""")
                .param("app", appId).param("id", id)
                .query((rs, n) -> new long[] {rs.getLong("h"), rs.getLong("opened"), rs.getLong("clicked")})
                .list();
    }

    /**
     * The recipient of {@code deviceId}, or those of the devices the user with {@code externalUserId} has
     * now (a device that changed hands since is found by its id), at most {@link #RECIPIENT_LIMIT}: what
     * {@code notification_recipient_states} shows of them, read by key. Rows by the primary key
     * (notification, device); batch members through the batches' GIN index on their device ids (V58: a
     * 10,000,000-recipient send has ~27,000 batches, which the view would all unnest); entries of the
     * notification's few handovers that no batch or row holds, as {@code sending}.
     */
    List<NotificationPages.RecipientState> recipients(UUID appId, UUID id, UUID deviceId, String externalUserId) {
        String devices = deviceId != null ? "select cast(:device as uuid) as id"
                : "select d.id from devices d join users u on u.id = d.user_id"
                + " where u.app_id = :app and u.external_user_id = :user and d.app_id = :app";
        String sql = """
                with d as materialized (%s limit %d)
                select device_id, platform, external_user_id, status, attempts, last_error, provider_message_id, due_at,
                       updated_at, expires_at
                from (select r.device_id, r.platform, r.external_user_id, r.status, r.attempts, r.last_error,
                             r.provider_message_id, r.due_at, r.updated_at, r.expires_at
                      from notification_recipients r
                      where r.app_id = :app and r.notification_id = :id and r.device_id in (select id from d)
                      union all
                      select m.device_id, b.platform, m.external_user_id, 'accepted', 1, null, m.provider_message_id,
                             b.due_at, b.recorded_at, b.expires_at
                      from notification_recipient_batches b
                      cross join lateral unnest(b.device_ids, b.external_user_ids, b.provider_message_ids)
                          as m(device_id, external_user_id, provider_message_id)
                      where b.app_id = :app and b.notification_id = :id
                        and b.device_ids && (select coalesce(array_agg(id), '{}') from d)
                        and m.device_id in (select id from d)
                      union all
                      select l.device_id, l.platform, l.external_user_id,
                             case when o.lease_until is null then 'pending' else 'sending' end,
                             case when o.lease_until is null then 0 else 1 end, null, null,
                             o.created_at, o.created_at, o.expires_at
                      from notification_handovers o
                      cross join lateral (%s) l
                      where o.app_id = :app and o.notification_id = :id
                        and o.device_ids && (select coalesce(array_agg(id), '{}') from d)
                        and l.device_id in (select id from d)
                        and not exists (select 1 from notification_recipients x
                                        where x.notification_id = o.notification_id and x.device_id = l.device_id)) s
                order by device_id limit %d""".formatted(devices, RECIPIENT_LIMIT, DeliveryRecipientRepository.UNRECORDED_ENTRIES,
                RECIPIENT_LIMIT);
        var statement = jdbc.sql(sql).param("app", appId).param("id", id);
        statement = deviceId != null ? statement.param("device", deviceId) : statement.param("user", externalUserId);
        return statement.query(this::state).list();
    }

    /**
     * The attempts of these devices' recipients that did not end them ({@code delivery_attempts}), oldest
     * first, at most {@link #ATTEMPT_LIMIT}; read through the recipient index (notification, device, time).
     */
    List<NotificationPages.RecipientAttempt> recipientAttempts(UUID appId, UUID id, List<UUID> devices) {
        return jdbc.sql("""
                        select device_id, attempt, at, outcome, reason, http_status from delivery_attempts
                        where notification_id = :id and device_id in (:devices) and app_id = :app
                        order by at, attempt limit :limit""")
                .param("app", appId).param("id", id).param("devices", devices).param("limit", ATTEMPT_LIMIT)
                .query((rs, n) -> new NotificationPages.RecipientAttempt(rs.getObject("device_id", UUID.class),
                        rs.getInt("attempt"), instant(rs, "at"), rs.getString("outcome"), rs.getString("reason"),
                        (Integer) rs.getObject("http_status")))
                .list();
    }

    /** The events of these devices for the notification, oldest first, at most {@link #EVENT_LIMIT}. */
    List<NotificationPages.RecipientEvent> recipientEvents(UUID appId, UUID id, List<UUID> devices) {
        return jdbc.sql("""
                        select device_id, event_type, event_name, occurred_at, received_at from events
                        where app_id = :app and notification_id = :id and device_id in (:devices)
                        order by occurred_at, id limit :limit""")
                .param("app", appId).param("id", id).param("devices", devices).param("limit", EVENT_LIMIT)
                .query((rs, n) -> new NotificationPages.RecipientEvent(rs.getObject("device_id", UUID.class),
                        rs.getString("event_type"), rs.getString("event_name"), instant(rs, "occurred_at"), instant(rs, "received_at")))
                .list();
    }

    private NotificationPages.RecipientState state(ResultSet rs, int n) throws SQLException {
        return new NotificationPages.RecipientState(rs.getObject("device_id", UUID.class), rs.getString("platform"),
                rs.getString("external_user_id"), rs.getString("status"), rs.getInt("attempts"), rs.getString("last_error"),
                rs.getString("provider_message_id"), instant(rs, "due_at"), instant(rs, "updated_at"), instant(rs, "expires_at"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }
}
