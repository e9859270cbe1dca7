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

    /**
     * A recipient as the API shows it (never a token); {@code listKey}: with the device id, its place in the
     * list order (see {@link #recipients(ListPosition, UUID, UUID, int, long)}).
     */
    record Recipient(UUID deviceId, String platform, String externalUserId, String status, int attempts,
                     String lastError, Instant updatedAt, Instant dueAt, Instant expiresAt, UUID listKey) {
    }

    /** A position in the recipient list: after the recipient with this list key and device id. */
    record ListPosition(UUID listKey, UUID deviceId) {
    }

    /** A page of the notification's recipients by offset, in list order. */
    List<Recipient> recipients(UUID appId, UUID id, PageRequest page) {
        return recipients(null, appId, id, page.fetchSize(), page.offset()).query(this::recipient).list();
    }

    /**
     * Up to {@code limit} recipients after {@code after}, in list order: ranges of the recipients' and the
     * batches' primary keys (and of the few handed over), whatever the depth.
     */
    List<Recipient> recipientsAfter(UUID appId, UUID id, ListPosition after, int limit) {
        return recipients(after, appId, id, limit, 0).query(this::recipient).list();
    }

    private static final UUID LAST_UUID = new UUID(-1L, -1L);

    /**
     * What {@code notification_recipient_states} shows of one notification, in list order, {@code limit}
     * after {@code offset}, after {@code after} when given. The order is (list key, device id): a row's
     * list key is its device id; a handed recipient's, whether still listed by its handover or recorded
     * in a batch (V58), is its handover's smallest device id, so it keeps its place when its outcome is
     * recorded accepted (one that is not moves forward, to its row's place: a walk by cursor may see it
     * twice, never miss it). Each branch is ordered and cut by itself, then merged:
     * <ul>
     * <li>the rows, a range of their primary key;
     * <li>the batch members: the batches from the position's group on are walked in key order (primary
     *     key) only until they hold enough members, counting in the position's own group only the members
     *     after it; every batch of the last group reached is read too (a group's members interleave across
     *     its batches), then their members are sorted. A page reads a group or two, at any depth;
     * <li>the recipients handed over and not recorded yet, as {@code sending} (as {@code pending} while their
     *     handover is unleased, V59): the handovers from the position's on, walked in list-key order
     *     ({@code notification_handovers_list_idx}) only until their unrecorded entries are enough (a spread
     *     send has a handover per 250 recipients waiting for a lease), each handover's entries less those its
     *     batches hold (one hash per handover), sorted, probing the recipients' key only until there are enough.
     * </ul>
     */
    private JdbcClient.StatementSpec recipients(ListPosition after, UUID appId, UUID id, int limit, long offset) {
        boolean cursor = after != null;
        String rowsAfter = cursor ? " and r.device_id > :g" : "";
        String batchesAfter = cursor ? " and %1$s.list_key >= :g" : "";
        String membersAfter = cursor
                ? "case when b2.list_key = :g then (select count(*) from unnest(b2.device_ids) as x where x > :a)"
                  + " else cardinality(b2.device_ids) end"
                : "cardinality(b2.device_ids)";
        String memberAfter = cursor ? " and (b.list_key, m.device_id) > (:g, :a)" : "";
        String handedAfter = cursor ? " and o.list_key >= :g and (o.list_key, l.device_id) > (:g, :a)" : "";
        var spec = jdbc.sql("""
                        select list_key, device_id, platform, external_user_id, status, attempts, last_error, updated_at,
                               due_at, expires_at
                        from ((select r.device_id as list_key, r.device_id, r.platform, r.external_user_id, r.status,
                                      r.attempts, r.last_error, r.updated_at, r.due_at, r.expires_at
                               from notification_recipients r
                               where r.notification_id = :id and r.app_id = :app%1$s
                               order by r.device_id limit :branch)
                              union all
                              (select b.list_key, m.device_id, b.platform, m.external_user_id, 'accepted', 1,
                                      cast(null as text), b.recorded_at, b.due_at, b.expires_at
                               from notification_recipient_batches b
                               cross join lateral unnest(b.device_ids, b.external_user_ids) as m(device_id, external_user_id)
                               where b.notification_id = :id and b.app_id = :app%2$s
                                 and b.list_key <= coalesce(
                                     (select w.list_key
                                      from (select b2.list_key, sum(%3$s) over (order by b2.list_key, b2.first_device) as upto
                                            from notification_recipient_batches b2
                                            where b2.notification_id = :id%4$s) w
                                      where w.upto >= :branch limit 1),
                                     cast(:last as uuid))%5$s
                               order by b.list_key, m.device_id limit :branch)
                              union all
                              (select h.list_key, h.device_id, h.platform, h.external_user_id,
                                      case when h.leased then 'sending' else 'pending' end, case when h.leased then 1 else 0 end,
                                      cast(null as text), h.created_at, h.created_at, h.expires_at
                               from (select o.list_key, l.device_id, l.platform, l.external_user_id, o.created_at, o.expires_at,
                                            o.lease_until is not null as leased
                                     from notification_handovers o
                                     cross join lateral (%7$s) l
                                     where o.notification_id = :id and o.app_id = :app%6$s
                                       and o.list_key <= coalesce(
                                           (select w.list_key
                                            from (select o2.list_key, sum(o2.handed - o2.recorded) over (order by o2.list_key) as upto
                                                  from notification_handovers o2
                                                  where o2.notification_id = :id%8$s) w
                                            where w.upto >= :branch limit 1),
                                           cast(:last as uuid))
                                     order by o.list_key, l.device_id) h
                               where not exists (select 1 from notification_recipients x
                                                 where x.notification_id = :id and x.device_id = h.device_id)
                               order by h.list_key, h.device_id limit :branch)) s
                        order by list_key, device_id limit :limit offset :offset"""
                        .formatted(rowsAfter, batchesAfter.formatted("b"), membersAfter, batchesAfter.formatted("b2"),
                                memberAfter, handedAfter, DeliveryRecipientRepository.UNRECORDED_ENTRIES,
                                cursor ? " and o2.list_key > :g" : ""))
                .param("id", id).param("app", appId).param("limit", limit).param("offset", offset)
                .param("branch", offset + limit).param("last", LAST_UUID);
        return cursor ? spec.param("g", after.listKey()).param("a", after.deviceId()) : spec;
    }

    private Recipient recipient(java.sql.ResultSet rs, int n) throws java.sql.SQLException {
        return new Recipient(rs.getObject("device_id", UUID.class), rs.getString("platform"),
                rs.getString("external_user_id"), rs.getString("status"), rs.getInt("attempts"),
                rs.getString("last_error"), rs.getTimestamp("updated_at").toInstant(), instant(rs, "due_at"),
                instant(rs, "expires_at"), rs.getObject("list_key", UUID.class));
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
