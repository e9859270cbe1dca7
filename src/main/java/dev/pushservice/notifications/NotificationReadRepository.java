package dev.pushservice.notifications;

import static dev.pushservice.notifications.NotificationRepository.instant;

import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.notifications.FanOutPageRepository.AudienceSql;
import dev.pushservice.notifications.FanOutPageRepository.RenderValues;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.segments.FilterCompiler;
import java.time.Instant;
import java.time.LocalDate;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;

/**
 * The read side of notifications: their list, their recipient counts (V46 {@code notification_counts}),
 * their recipients as the API shows them, the per-day outcomes, and what a creation or a preview
 * reads of the audience (whether a target exists, how many devices the audience selects now, a
 * sample recipient). Writes nothing. Every statement filters by app. Thread-safe; delivery builds
 * one on its own pool to read counts when it finishes a notification.
 */
@Repository
class NotificationReadRepository {

    private final JdbcClient jdbc;
    private final JsonMapper json;

    NotificationReadRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    /** The app's notifications, newest first. */
    List<NotificationRepository.Row> list(UUID appId, PageRequest page) {
        return jdbc.sql("select " + NotificationRepository.COLUMNS + """
                         from notifications where app_id = :app order by created_at desc, id desc
                        limit :limit offset :offset""")
                .param("app", appId).param("limit", page.fetchSize()).param("offset", page.offset())
                .query(NotificationRepository.rows(json)).list();
    }

    /** One count per (notification, platform, recipient status). */
    record Count(UUID notificationId, String platform, String status, long count) {
    }

    /**
     * Per notification, platform and status, as {@code notification_recipient_states} shows them
     * (recipients handed over and not recorded yet count as {@code sending}), read from the counts the
     * database keeps (V46 {@code notification_counts}): a sum of a handful of rows per notification,
     * never a read of its recipients. Exact in the caller's snapshot: the counts change in the
     * transactions that change the rows.
     */
    List<Count> counts(UUID appId, Collection<UUID> ids) {
        if (ids.isEmpty()) return List.of();
        return jdbc.sql("""
                        select notification_id, platform, status, sum(count) as n from notification_counts
                        where app_id = :app and notification_id in (:ids)
                        group by notification_id, platform, status
                        having sum(count) <> 0""")
                .param("app", appId).param("ids", List.copyOf(ids))
                .query((rs, n) -> new Count(rs.getObject("notification_id", UUID.class), rs.getString("platform"),
                        rs.getString("status"), rs.getLong("n")))
                .list();
    }

    List<DeliveryOutcomeCounts.DailyCount> dailyOutcomes(UUID appId, LocalDate from, LocalDate to) {
        return jdbc.sql("""
                        select day, outcome, count from delivery_daily_counts
                        where app_id = :app and day between :from and :to""")
                .param("app", appId).param("from", from).param("to", to)
                .query((rs, n) -> new DeliveryOutcomeCounts.DailyCount(rs.getObject("day", LocalDate.class),
                        rs.getString("outcome"), rs.getLong("count")))
                .list();
    }

    /** A recipient as the API shows it (never a token). */
    record Recipient(UUID deviceId, String platform, String externalUserId, String status, int attempts,
                     String lastError, Instant updatedAt, Instant dueAt, Instant expiresAt) {
    }

    /** A page of the notification's recipients by offset, in device order. */
    List<Recipient> recipients(UUID appId, UUID id, PageRequest page) {
        return recipients("", appId, id, page.fetchSize(), page.offset()).query(this::recipient).list();
    }

    /**
     * Up to {@code limit} recipients after the device {@code after}, in device order: a range of the
     * recipients' primary key (and of the few handed over), whatever the depth.
     */
    List<Recipient> recipientsAfter(UUID appId, UUID id, UUID after, int limit) {
        return recipients(" and %s > :after", appId, id, limit, 0).param("after", after).query(this::recipient).list();
    }

    /**
     * What {@code notification_recipient_states} shows of one notification, in device order, {@code limit}
     * after {@code offset}; {@code after} (a condition on {@code %s}, the device column) added to both
     * branches. Each branch is ordered and cut by itself, then merged: the rows, a range of their primary
     * key; and the recipients handed over without a row yet, as {@code sending}. The hand-over branch
     * sorts its entries first and probes the recipients' key only until it has enough. Through the view,
     * every entry in flight (thousands during a large send) was probed before the sort, at every read.
     */
    private JdbcClient.StatementSpec recipients(String after, UUID appId, UUID id, int limit, long offset) {
        return jdbc.sql("""
                        select device_id, platform, external_user_id, status, attempts, last_error, updated_at, due_at, expires_at
                        from ((select r.device_id, r.platform, r.external_user_id, r.status, r.attempts, r.last_error,
                                      r.updated_at, r.due_at, r.expires_at
                               from notification_recipients r
                               where r.notification_id = :id and r.app_id = :app%s
                               order by r.device_id limit :branch)
                              union all
                              (select h.device_id, h.platform, h.external_user_id, 'sending', 1, cast(null as text),
                                      h.created_at, h.created_at, h.expires_at
                               from (select l.device_id, l.platform, l.external_user_id, o.created_at, o.expires_at
                                     from notification_handovers o
                                     cross join lateral unnest(o.device_ids, o.platforms, o.external_user_ids)
                                         as l(device_id, platform, external_user_id)
                                     where o.notification_id = :id and o.app_id = :app%s
                                     order by l.device_id) h
                               where not exists (select 1 from notification_recipients x
                                                 where x.notification_id = :id and x.device_id = h.device_id)
                               order by h.device_id limit :branch)) s
                        order by device_id limit :limit offset :offset"""
                        .formatted(after.formatted("r.device_id"), after.formatted("l.device_id")))
                .param("id", id).param("app", appId).param("limit", limit).param("offset", offset)
                .param("branch", offset + limit);
    }

    private Recipient recipient(java.sql.ResultSet rs, int n) throws java.sql.SQLException {
        return new Recipient(rs.getObject("device_id", UUID.class), rs.getString("platform"),
                rs.getString("external_user_id"), rs.getString("status"), rs.getInt("attempts"),
                rs.getString("last_error"), rs.getTimestamp("updated_at").toInstant(), instant(rs, "due_at"),
                instant(rs, "expires_at"));
    }

    // --- the audience, as creation and preview read it ----------------------------------------

    boolean deviceExists(UUID appId, UUID deviceId) {
        return jdbc.sql("select exists (select 1 from devices where app_id = :app and id = :id)")
                .param("app", appId).param("id", deviceId).query(Boolean.class).single();
    }

    boolean userExists(UUID appId, String externalUserId) {
        return jdbc.sql("select exists (select 1 from users where app_id = :app and external_user_id = :ext)")
                .param("app", appId).param("ext", externalUserId).query(Boolean.class).single();
    }

    /**
     * How many devices of the app the audience selects now, per platform: the fan-out's selection
     * (enabled, not invalidated, the same compiled SQL) counted in one statement. Call inside a
     * transaction (the compiled filters run with {@link FilterCompiler#WORK_MEM}).
     */
    Map<String, Long> audienceCounts(UUID appId, AudienceSql audience) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        Map<String, Long> counts = new LinkedHashMap<>();
        jdbc.sql("select d.platform, count(*) as n from devices d " + audience.joins()
                        + " where d.app_id = :app and " + FanOutPageRepository.SELECTABLE + " and (" + audience.predicate() + ")"
                        + " group by d.platform")
                .param("app", appId).params(audience.params())
                .query((rs, n) -> counts.put(rs.getString("platform"), rs.getLong("n"))).list();
        return counts;
    }

    /**
     * A sample recipient per platform: the first device of each platform in the fan-out's order
     * that the audience selects, read as delivery reads a claimed recipient (token, external user id,
     * the render values the fan-out would freeze). One statement, an index-ordered {@code limit 1}
     * per platform. Call inside a transaction.
     */
    List<DeliveryStore.Claimed> sampleRecipients(UUID appId, AudienceSql audience, RenderValues values) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        return jdbc.sql("select null::uuid as notification_id, :app as app_id, p.id as device_id, 0 as attempts, null::text as unsendable, null::timestamptz as expires_at,"
                        + " p.platform, p.token, u.external_user_id, (" + values.sql("p") + ")::text as render_values"
                        + " from (values ('ios'), ('android'), ('web')) pl(platform) cross join lateral"
                        + " (select d.id, d.platform, d.token, d.user_id, d.locale from devices d " + audience.joins()
                        + " where d.app_id = :app and d.platform = pl.platform and " + FanOutPageRepository.SELECTABLE
                        + " and (" + audience.predicate() + ") order by d.created_at desc, d.id limit 1) p"
                        + " left join users u on u.id = p.user_id order by p.platform")
                .param("app", appId).params(audience.params())
                .query((rs, n) -> DeliveryRecipientRepository.claimed(rs, Platform.fromValue(rs.getString("platform")).orElseThrow()))
                .list();
    }

    /** A device of the app read as a sample recipient, and whether the audience selects it; empty when unknown. */
    Optional<Sample> sampleDevice(UUID appId, UUID deviceId, AudienceSql audience, RenderValues values) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        return jdbc.sql("select null::uuid as notification_id, p.app_id, p.id as device_id, 0 as attempts, null::text as unsendable, null::timestamptz as expires_at,"
                        + " p.platform, p.token, u.external_user_id, (" + values.sql("p") + ")::text as render_values,"
                        + " exists (select 1 from devices d " + audience.joins() + " where d.app_id = :app and d.id = p.id"
                        + " and " + FanOutPageRepository.SELECTABLE + " and (" + audience.predicate() + ")) as in_audience"
                        + " from devices p left join users u on u.id = p.user_id where p.app_id = :app and p.id = :device")
                .param("app", appId).param("device", deviceId).params(audience.params())
                .query((rs, n) -> new Sample(DeliveryRecipientRepository.claimed(rs, Platform.fromValue(rs.getString("platform")).orElseThrow()),
                        rs.getBoolean("in_audience")))
                .optional();
    }

    /** A device to preview, and whether the notification's audience would reach it. */
    record Sample(DeliveryStore.Claimed recipient, boolean inAudience) {
    }
}
