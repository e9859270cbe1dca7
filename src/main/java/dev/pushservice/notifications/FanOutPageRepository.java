package dev.pushservice.notifications;

import static dev.pushservice.notifications.NotificationRepository.instant;
import static dev.pushservice.notifications.NotificationRepository.ts;

import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.segments.FilterCompiler;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * The fan-out's page SQL: ONE page statement, assembled from parts ({@link #statement}), writes a
 * page of recipients. Its parts: the page (the next {@code pageSize} devices the audience selects
 * after the cursor, or devices given by id with their times: {@link Times.PerDevice}); how each
 * recipient's times are chosen ({@link Times}: at once, per zone from a JSON map, per device from
 * arrays); whether the first {@code room} of each platform are handed over instead of inserted
 * ({@link Handing}); what the final select returns (the page's counts and cursor, plus the handed
 * recipients when handing over). Every variant is one statement per page, inserts with
 * {@code ON CONFLICT (notification_id, device_id) DO NOTHING} (a replayed page is harmless) and
 * makes rows with no attempt counted and, when pending, no reason: V46's counts tell the row of a
 * handed recipient (inserted by {@link DeliveryRecipientRepository#recordHanded} and the handover
 * sweeps) by its attempt or reason. Reads {@code devices} and {@code users}, never writes them, as
 * {@link FilterCompiler} does for segments; every statement filters by app. Thread-safe.
 */
@Repository
class FanOutPageRepository {

    private final JdbcClient jdbc;

    FanOutPageRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Audience SQL over a device row {@code d}: {@code joins} after {@code devices d}, {@code predicate} in the WHERE clause. */
    record AudienceSql(String joins, String predicate, Map<String, Object> params) {
    }

    /** Keys of {@code render_values} holding the recipient's locales (see {@link RenderValues}). */
    static final String DEVICE_LOCALE = "device_locale";
    static final String USER_LOCALE = "user_locale";

    /**
     * What a recipient's {@code render_values} freezes at fan-out, so that delivery renders it
     * without reading users or devices again: the user's {@code tags} and {@code properties} when the
     * content has placeholders that read them, the device's and the user's locale when it has
     * localizations; nothing (null) when it needs neither.
     */
    record RenderValues(boolean userValues, boolean locales) {

        static final RenderValues NONE = new RenderValues(false, false);

        /** The SQL expression (jsonb) over the device row aliased {@code device} (with {@code locale}) and its user {@code u} (left joined). */
        String sql(String device) {
            if (!userValues && !locales) return "cast(null as jsonb)";
            List<String> pairs = new ArrayList<>();
            if (userValues) pairs.add("'tags', u.tags, 'properties', u.properties");
            if (locales) pairs.add("'" + DEVICE_LOCALE + "', " + device + ".locale, '" + USER_LOCALE + "', u.locale");
            return "jsonb_build_object(" + String.join(", ", pairs) + ")";
        }
    }

    /**
     * The page of the audience a statement reads: up to {@code pageSize} enabled, non-invalidated
     * devices of the app created at or before {@code audienceAt} that {@code audience} selects, after
     * the cursor ({@code cursorAt}, {@code cursorId}; null for the first page) in the order
     * (created_at desc, id) that {@code devices_app_created_idx} reads.
     */
    record Page(UUID appId, UUID notificationId, AudienceSql audience, Instant audienceAt, OffsetDateTime cursorAt,
                UUID cursorId, int pageSize) {
    }

    /** What one page of materialization did. {@code lastAt}/{@code lastId}: the cursor after it (null when nothing was selected). */
    record PageResult(int selected, int inserted, OffsetDateTime lastAt, UUID lastId, Instant lastDue) {

        PageResult(int selected, int inserted, OffsetDateTime lastAt, UUID lastId) {
            this(selected, inserted, lastAt, lastId, null);
        }
    }

    /**
     * How each recipient of a page gets its due time ({@code due_at}, where {@code next_attempt_at}
     * starts), its expiry and, for one that can never be sent in time, the reason it is inserted
     * {@code expired}: SQL expressions over the device {@code p} and its user {@code u}.
     */
    sealed interface Times {

        /** Due now, expiring at {@code expiresAt} (null: no TTL); always {@code pending}. */
        record AtOnce(Instant expiresAt) implements Times {
        }

        /**
         * The times of its zone: {@code zones} is a JSON array of {@code z} (zone id), {@code d} (due),
         * {@code x} (expiry, or null), {@code e} (null, or the reason it is expired at once). A recipient
         * takes its device's zone, else its user's, else {@code fallback}.
         */
        record PerZone(String zones, ZonedTimes fallback) implements Times {
        }

        /**
         * Devices given by id (read by {@link #selectPage}), each with its own times: {@code devices[i]}
         * is due at {@code dueMicros[i]} (epoch microseconds) and expires at {@code expiresMicros[i]}
         * (null: no TTL); a non-null {@code expiredReasons[i]} inserts it already {@code expired} with
         * that reason (held past its TTL: never sent).
         */
        record PerDevice(List<UUID> devices, long[] dueMicros, Long[] expiresMicros, String[] expiredReasons)
                implements Times {
        }

        /** The expression of the recipient's expiry reason (null: sendable). */
        private String gone() {
            return switch (this) {
                case AtOnce a -> "cast(null as text)";
                case PerZone z -> pick("e");
                case PerDevice d -> "v.gone";
            };
        }

        private String status() {
            return this instanceof AtOnce ? "'pending'" : "case when " + gone() + " is null then 'pending' else 'expired' end";
        }

        private String due() {
            return switch (this) {
                case AtOnce a -> ":now";
                case PerZone z -> pick("d");
                case PerDevice d -> "to_timestamp(v.due / 1e6)";
            };
        }

        private String expires() {
            return switch (this) {
                case AtOnce a -> ":expires_at";
                case PerZone z -> pick("x");
                case PerDevice d -> "to_timestamp(v.expires / 1e6)";
            };
        }

        /** The zone's value of field {@code f}: the device's zone, else its user's, else the fallback's. */
        private static String pick(String f) {
            return "case when md.z is not null then md.%1$s when mu.z is not null then mu.%1$s else :f_%1$s end".formatted(f);
        }

        /** Joins after the device {@code p} and its user {@code u}. */
        private String joins() {
            return this instanceof PerZone
                    ? " left join zones md on md.z = p.timezone left join zones mu on mu.z = u.timezone" : "";
        }

        /** The parameters its expressions bind (values may be null). */
        private Map<String, Object> params() {
            Map<String, Object> params = new java.util.HashMap<>();
            switch (this) {
                case AtOnce a -> params.put("expires_at", ts(a.expiresAt()));
                case PerZone z -> {
                    params.put("zones", z.zones());
                    params.put("f_d", ts(z.fallback().due()));
                    params.put("f_x", ts(z.fallback().expiresAt()));
                    params.put("f_e", z.fallback().expiredReason());
                }
                case PerDevice d -> {
                    params.put("ids", array(d.devices().size(), i -> d.devices().get(i).toString()));
                    params.put("due", array(d.dueMicros().length, i -> Long.toString(d.dueMicros()[i])));
                    params.put("expires", array(d.expiresMicros().length, i -> text(d.expiresMicros()[i])));
                    params.put("gone", array(d.expiredReasons().length, i -> text(d.expiredReasons()[i])));
                }
            }
            return params;
        }

        private static String text(Object value) {
            return value == null ? "NULL" : value.toString();
        }

        /** A PostgreSQL array literal of {@code n} elements. */
        private static String array(int n, java.util.function.IntFunction<String> element) {
            StringBuilder out = new StringBuilder("{");
            for (int i = 0; i < n; i++) {
                if (i > 0) out.append(',');
                out.append(element.apply(i));
            }
            return out.append('}').toString();
        }
    }

    /** One zone's times for {@link Times.PerZone}: due, expiry (or null), the reason it expires at once (or null). */
    record ZonedTimes(Instant due, Instant expiresAt, String expiredReason) {
    }

    /**
     * A page's hand-over: the first {@code room[platform ordinal]} recipients of each platform get no
     * row but are listed in one {@code notification_handovers} row, leased until {@code leaseEnd}. The
     * rest of the page gets no row either: it is listed in unleased handovers (V59), one per platform and
     * run of up to {@code unleasedChunk} (at least 1) recipients, which any worker's claimer leases whole
     * ({@link DeliveryRecipientRepository#leaseHandovers}).
     */
    record Handing(int[] room, Instant leaseEnd, int unleasedChunk) {
    }

    /**
     * What a page with a hand-over did: the page as {@link #insert} reports it, the devices it
     * selected per platform (by ordinal), and the recipients it handed over to the lane.
     */
    record HandedPage(PageResult page, int[] selectedPerPlatform, List<DeliveryStore.Claimed> handed) {
    }

    /**
     * Inserts the next page of recipients, each with its {@code times} ({@link Times.AtOnce} or
     * {@link Times.PerZone}). Devices that are already recipients are skipped (a re-run after a
     * crash). One statement; the compiled filters run with {@link FilterCompiler#WORK_MEM}, so call
     * it inside a transaction. {@code lastDue} (per zone only): the latest due time of a pending
     * recipient inserted (null when none).
     */
    PageResult insert(Page page, Times times, RenderValues renderValues, Instant now) {
        if (times instanceof Times.PerDevice) throw new IllegalArgumentException("devices by id: insertTimed");
        return statement(page, times, null, renderValues, now).query((rs, n) -> new PageResult(rs.getInt("selected"),
                rs.getInt("inserted"), rs.getObject("last_at", OffsetDateTime.class), rs.getObject("last_id", UUID.class),
                times instanceof Times.PerZone ? instant(rs, "last_due") : null)).single();
    }

    /**
     * The next page as {@link #insert} writes it due at once (expiring at {@code expiresAt}), except
     * that the first {@code room} recipients of each platform get no row: one
     * {@code notification_handovers} row lists them, leased until {@code leaseEnd}, and they are
     * returned with their device's token and their first attempt counted, for this instance's lane
     * ({@link dev.pushservice.delivery.Handover}); recording inserts their rows with their outcomes.
     * The rest of the page is listed in unleased handovers ({@link Handing#unleasedChunk}). The cursor saved with the page keeps a handed
     * device out of every later page. One statement; call it inside a transaction.
     */
    HandedPage insertHanded(Page page, Instant expiresAt, Handing handing, RenderValues renderValues, Instant now) {
        List<DeliveryStore.Claimed> handed = new ArrayList<>();
        PageResult[] result = new PageResult[1];
        int[] perPlatform = new int[Platform.values().length];
        statement(page, new Times.AtOnce(expiresAt), handing, renderValues, now).query(rs -> {
            if (result[0] == null) {
                result[0] = new PageResult(rs.getInt("selected"), rs.getInt("inserted"),
                        rs.getObject("last_at", OffsetDateTime.class), rs.getObject("last_id", UUID.class));
                perPlatform[Platform.IOS.ordinal()] = rs.getInt("selected_ios");
                perPlatform[Platform.ANDROID.ordinal()] = rs.getInt("selected_android");
                perPlatform[Platform.WEB.ordinal()] = rs.getInt("selected_web");
            }
            String platform = rs.getString("platform");
            if (platform != null) {
                handed.add(DeliveryRecipientRepository.claimed(rs, Platform.fromValue(platform).orElseThrow(),
                        new DeliveryStore.Handed(rs.getLong("handover_id"), rs.getObject("user_id", UUID.class)), now));
            }
        });
        return new HandedPage(result[0], perPlatform, handed);
    }

    /**
     * Recipients of a page read by {@link #selectPage}, each with its own times ({@link Times.PerDevice}),
     * in one statement. Returns how many were inserted.
     */
    int insertTimed(UUID appId, UUID notificationId, Times.PerDevice times, RenderValues renderValues, Instant now) {
        if (times.devices().isEmpty()) return 0;
        return statement(new Page(appId, notificationId, null, null, null, null, 0), times, null, renderValues, now)
                .query((rs, n) -> rs.getInt("inserted")).single();
    }

    /** The end of every page statement over the audience: the cursor after the page (its last device), one row even for an empty page. */
    private static final String PAGE_END = " l.created_at as last_at, l.id as last_id from (select 1) one"
            + " left join (select created_at, id from page order by created_at, id desc limit 1) l on true";

    /**
     * The one page statement, from its parts: the page (the audience's, as {@link #pageSql} reads it,
     * or for {@link Times.PerDevice} the devices given), each recipient's {@code times}, the
     * hand-over when {@code handing} is not null (due at once only), and the final select that
     * reports them. Binds every parameter; sets {@link FilterCompiler#WORK_MEM} first when it reads
     * the audience.
     */
    private JdbcClient.StatementSpec statement(Page page, Times times, Handing handing, RenderValues renderValues,
                                               Instant now) {
        if (handing != null && !(times instanceof Times.AtOnce)) throw new IllegalArgumentException("hand-over is due at once");
        boolean audience = !(times instanceof Times.PerDevice);
        String values = renderValues.sql("p");
        StringBuilder sql = new StringBuilder("with ");
        String rows = "page p";
        if (audience) {
            jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
            sql.append("page as (").append(pageSql(page.audience(), page.cursorAt(), handing != null)).append("), ");
        } else {
            rows = "unnest(cast(:ids as uuid[]), cast(:due as bigint[]), cast(:expires as bigint[]), cast(:gone as text[]))"
                    + " as v(id, due, expires, gone) join devices p on p.id = v.id and p.app_id = :app";
        }
        if (handing != null) {
            sql.append("ranked as (select q.*, q.rn <= q.room as handed from (select p.*,")
                    .append(" row_number() over (partition by p.platform order by p.created_at desc, p.id) as rn,")
                    .append(" case p.platform when 'ios' then :room_ios when 'android' then :room_android")
                    .append(" when 'web' then :room_web else 0 end as room from page p) q), ");
            rows = "ranked p";
        }
        if (times instanceof Times.PerZone) {
            sql.append("zones as (select * from jsonb_to_recordset(cast(:zones as jsonb))")
                    .append(" as m(z text, d timestamptz, x timestamptz, e text)), ");
        }
        // a hand-over page writes no rows: what its room does not take goes to unleased handovers
        if (handing == null) sql.append("ins as (insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,")
                .append(" external_user_id, status, last_error, next_attempt_at, due_at, expires_at, render_values, updated_at)")
                .append(" select :notification, p.id, :app, p.platform, p.user_id, u.external_user_id, ")
                .append(times.status()).append(", ").append(times.gone()).append(", ").append(times.due()).append(", ")
                .append(times.due()).append(", ").append(times.expires()).append(", ").append(values).append(", :now")
                .append(" from ").append(rows).append(" left join users u on u.id = p.user_id").append(times.joins())
                .append(" on conflict (notification_id, device_id) do nothing returning due_at, status), ");
        if (handing != null) {
            // the rest of the page, per platform in runs of up to :chunk, for any worker's claimer to lease
            sql.append("rest as (insert into notification_handovers (notification_id, app_id, lease_until, created_at,")
                    .append(" expires_at, handed, list_key, platform, device_ids, platforms, user_ids, external_user_ids,")
                    .append(" render_values) select :notification, :app, null, :now, :expires_at, count(*),")
                    .append(" min(p.id::text collate \"C\")::uuid, p.platform, array_agg(p.id), array_agg(p.platform),")
                    .append(" array_agg(p.user_id), array_agg(u.external_user_id),")
                    .append(" jsonb_object_agg(p.id::text, ").append(values).append(") filter (where ").append(values)
                    .append(" is not null) from ranked p left join users u on u.id = p.user_id where not p.handed")
                    .append(" group by p.platform, (p.rn - p.room - 1) / :chunk returning handed), ");
        }
        if (handing != null) {
            sql.append("hand as (select p.id, p.platform, p.user_id, u.external_user_id, p.token, ").append(values)
                    .append(" as rv from ranked p left join users u on u.id = p.user_id where p.handed), ")
                    .append("ho as (insert into notification_handovers (notification_id, app_id, lease_until, created_at,")
                    .append(" expires_at, handed, list_key, device_ids, platforms, user_ids, external_user_ids, render_values)")
                    .append(" select :notification, :app, :lease_end, :now, :expires_at, count(*), min(id::text collate \"C\")::uuid, array_agg(id),")
                    .append(" array_agg(platform), array_agg(user_id), array_agg(external_user_id),")
                    .append(" jsonb_object_agg(id::text, rv) filter (where rv is not null) from hand having count(*) > 0")
                    .append(" returning id), ")
                    .append("summary as (select (select count(*) from page) as selected,")
                    .append(" (select coalesce(sum(handed), 0) from rest) + (select count(*) from hand) as inserted,")
                    .append(" (select count(*) from page where platform = 'ios') as selected_ios,")
                    .append(" (select count(*) from page where platform = 'android') as selected_android,")
                    .append(" (select count(*) from page where platform = 'web') as selected_web,")
                    .append(PAGE_END).append(") ")
                    .append("select s.*, ho.id as handover_id, h.id as device_id, h.platform, h.user_id,")
                    .append(" h.external_user_id, h.token, h.rv::text as render_values,")
                    .append(" cast(:notification as uuid) as notification_id, cast(:app as uuid) as app_id, 1 as attempts,")
                    .append(" cast(:expires_at as timestamptz) as expires_at, cast(null as text) as unsendable")
                    .append(" from summary s left join ho on true left join hand h on true");
        } else if (audience) {
            sql.setLength(sql.length() - 2); // the ", " after the last CTE
            sql.append(" select (select count(*) from page) as selected, (select count(*) from ins) as inserted,")
                    .append(times instanceof Times.PerZone
                            ? " (select max(due_at) from ins where status = 'pending') as last_due," : "")
                    .append(PAGE_END);
        } else {
            sql.setLength(sql.length() - 2);
            sql.append(" select (select count(*) from ins) as inserted");
        }
        var spec = jdbc.sql(sql.toString()).param("app", page.appId()).param("notification", page.notificationId())
                .param("now", ts(now));
        if (audience) spec = bindPage(spec, page).params(page.audience().params());
        if (handing != null) {
            spec = spec.param("lease_end", ts(handing.leaseEnd()))
                    .param("room_ios", handing.room()[Platform.IOS.ordinal()])
                    .param("room_android", handing.room()[Platform.ANDROID.ordinal()])
                    .param("room_web", handing.room()[Platform.WEB.ordinal()]);
            spec = spec.param("chunk", handing.unleasedChunk());
        }
        return spec.params(times.params());
    }

    /** The parameters of {@link #pageSql}: the app's, the audience instant, the page size, the cursor's when there is one. */
    private static JdbcClient.StatementSpec bindPage(JdbcClient.StatementSpec spec, Page page) {
        spec = spec.param("app", page.appId()).param("audience_at", ts(page.audienceAt())).param("page_size", page.pageSize());
        return page.cursorAt() == null ? spec : spec.param("cursor_at", page.cursorAt()).param("cursor_id", page.cursorId());
    }

    /**
     * The next page of the audience, in the order of {@link #insert}, as devices with the time
     * zones their send time depends on (the device's, its user's). Nothing is inserted: a page whose
     * recipients' times differ per device is read here, timed in Java, then written by
     * {@link #insertTimed}. Call it inside a transaction (see {@link #insert}).
     */
    List<PageDevice> selectPage(Page page) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        var spec = jdbc.sql("with page as (" + pageSql(page.audience(), page.cursorAt(), false) + ") "
                + "select p.id, p.created_at, p.timezone as device_zone, u.timezone as user_zone from page p"
                + " left join users u on u.id = p.user_id order by p.created_at desc, p.id");
        return bindPage(spec, page).params(page.audience().params())
                .query((rs, n) -> new PageDevice(rs.getObject("id", UUID.class), rs.getObject("created_at", OffsetDateTime.class),
                        rs.getString("device_zone"), rs.getString("user_zone")))
                .list();
    }

    /** A device of a page: {@code createdAt} for the cursor, the zones its send time depends on (unchecked names). */
    record PageDevice(UUID id, OffsetDateTime createdAt, String deviceZone, String userZone) {
    }

    /**
     * The page query over {@code devices d}: up to {@code :page_size} enabled, non-invalidated
     * devices of the app created at or before {@code :audience_at} that the audience selects, after
     * the cursor, in the order (created_at desc, id) that {@code devices_app_created_idx} reads; with
     * each device's {@code token} too when {@code token}.
     */
    private static String pageSql(AudienceSql audience, OffsetDateTime cursorAt, boolean token) {
        String cursor = cursorAt == null ? ""
                // the first condition bounds the index range, the second skips what the cursor's instant already gave
                : " and d.created_at <= :cursor_at and (d.created_at < :cursor_at or d.id > :cursor_id)";
        return "select d.id, d.created_at, d.platform, d.user_id, d.timezone, d.locale" + (token ? ", d.token" : "")
                + " from devices d " + audience.joins()
                + " where d.app_id = :app and " + SELECTABLE + " and d.created_at <= :audience_at"
                + cursor + " and (" + audience.predicate() + ")"
                + " order by d.created_at desc, d.id limit :page_size";
    }

    /** The devices {@code d} a send can reach: enabled, not invalidated (the preview counts the same). */
    static final String SELECTABLE = "d.enabled and d.invalidated_at is null";
}
