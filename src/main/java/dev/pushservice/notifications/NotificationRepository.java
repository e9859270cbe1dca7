package dev.pushservice.notifications;

import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.segments.FilterCompiler;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * SQL for notifications, their recipients and the audience they select. Every statement filters by
 * app. Reads {@code devices} and {@code users} (never writes them) for the set-based audience SQL,
 * as {@link FilterCompiler} does for segments. Its page inserts make recipient rows with no attempt
 * counted and, when pending, no reason: V46's counts tell the row of a handed recipient (inserted by
 * {@link DeliveryRecipientRepository#recordHanded} and the handover sweeps) by its attempt or reason.
 */
@Repository
class NotificationRepository {

    /** Recipient states that are final. */
    static final List<String> TERMINAL_RECIPIENT = List.of("accepted", "failed", "invalid_token", "cancelled", "expired",
            "skipped_frequency_cap");

    private static final String COLUMNS = """
            id, app_id, name, status, priority, interruption_level, content::text as content, template_id,
            template_version, audience::text as audience, ttl, local_delivery_time, frequency_cap_override,
            scheduled_at, audience_at, created_at, queued_at, processing_at, finished_at, updated_at,
            fanout_cursor_at, fanout_cursor_id, recipient_count, summary::text as summary, request_hash, last_due_at""";

    private final JdbcClient jdbc;
    private final JsonMapper json;

    NotificationRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
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
                .param("app", appId).param("key", key).query(this::row).optional();
    }

    Optional<Row> find(UUID appId, UUID id) {
        return jdbc.sql("select " + COLUMNS + " from notifications where app_id = :app and id = :id")
                .param("app", appId).param("id", id).query(this::row).optional();
    }

    /** The row, locked against concurrent state changes until the transaction ends. */
    Optional<Row> lock(UUID appId, UUID id) {
        return jdbc.sql("select " + COLUMNS + " from notifications where app_id = :app and id = :id for update")
                .param("app", appId).param("id", id).query(this::row).optional();
    }

    boolean exists(UUID appId, UUID id) {
        return jdbc.sql("select exists (select 1 from notifications where app_id = :app and id = :id)")
                .param("app", appId).param("id", id).query(Boolean.class).single();
    }

    List<Row> list(UUID appId, PageRequest page) {
        return jdbc.sql("select " + COLUMNS + """
                         from notifications where app_id = :app order by created_at desc, id desc
                        limit :limit offset :offset""")
                .param("app", appId).param("limit", page.fetchSize()).param("offset", page.offset())
                .query(this::row).list();
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

    // --- audience -----------------------------------------------------------------------------

    boolean deviceExists(UUID appId, UUID deviceId) {
        return jdbc.sql("select exists (select 1 from devices where app_id = :app and id = :id)")
                .param("app", appId).param("id", deviceId).query(Boolean.class).single();
    }

    boolean userExists(UUID appId, String externalUserId) {
        return jdbc.sql("select exists (select 1 from users where app_id = :app and external_user_id = :ext)")
                .param("app", appId).param("ext", externalUserId).query(Boolean.class).single();
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

    /** What one page of materialization did. {@code lastAt}/{@code lastId}: the cursor after it (null when nothing was selected). */
    record PageResult(int selected, int inserted, OffsetDateTime lastAt, UUID lastId, Instant lastDue) {

        PageResult(int selected, int inserted, OffsetDateTime lastAt, UUID lastId) {
            this(selected, inserted, lastAt, lastId, null);
        }
    }

    /**
     * Inserts the next page of recipients: up to {@code pageSize} enabled, non-invalidated devices
     * of the app created at or before {@code audienceAt} that the audience selects, after the cursor
     * in the order (created_at desc, id) that {@code devices_app_created_idx} reads. Devices that are
     * already recipients are skipped (a re-run after a crash). One statement; the compiled filters
     * run with {@link FilterCompiler#WORK_MEM}, so call it inside a transaction.
     */
    PageResult insertPage(UUID appId, UUID notificationId, AudienceSql audience, Instant audienceAt,
                          OffsetDateTime cursorAt, UUID cursorId, int pageSize, RenderValues renderValues, Instant now,
                          Instant expiresAt) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        String values = renderValues.sql("p");
        String sql = "with page as (" + pageSql(audience, cursorAt) + "), "
                + "ins as (insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,"
                + " external_user_id, status, next_attempt_at, due_at, expires_at, render_values, updated_at)"
                + " select :notification, p.id, :app, p.platform, p.user_id, u.external_user_id, 'pending', :now, :now,"
                + " :expires_at, " + values + ", :now from page p left join users u on u.id = p.user_id"
                + " on conflict (notification_id, device_id) do nothing returning 1) "
                + "select (select count(*) from page) as selected, (select count(*) from ins) as inserted,"
                + PAGE_END;
        var spec = pageStatement(sql, appId, notificationId, audienceAt, cursorAt, cursorId, pageSize, now)
                .param("expires_at", ts(expiresAt)).params(audience.params());
        return spec.query((rs, n) -> new PageResult(rs.getInt("selected"), rs.getInt("inserted"),
                rs.getObject("last_at", OffsetDateTime.class), rs.getObject("last_id", UUID.class))).single();
    }

    /** The end of every page statement: the cursor after the page (its last device), one row even for an empty page. */
    private static final String PAGE_END = " l.created_at as last_at, l.id as last_id from (select 1) one"
            + " left join (select created_at, id from page order by created_at, id desc limit 1) l on true";

    /** A page statement ({@link #pageSql}) with the parameters every page binds, the cursor's when there is one. */
    private JdbcClient.StatementSpec pageStatement(String sql, UUID appId, UUID notificationId, Instant audienceAt,
                                                   OffsetDateTime cursorAt, UUID cursorId, int pageSize, Instant now) {
        var spec = jdbc.sql(sql).param("app", appId).param("notification", notificationId)
                .param("audience_at", ts(audienceAt)).param("page_size", pageSize).param("now", ts(now));
        return cursorAt == null ? spec : spec.param("cursor_at", cursorAt).param("cursor_id", cursorId);
    }

    /**
     * What a page with a hand-over did: the page as {@link #insertPage} reports it, the devices it
     * selected per platform (by ordinal), and the recipients it handed over to the lane.
     */
    record HandedPage(PageResult page, int[] selectedPerPlatform, List<DeliveryStore.Claimed> handed) {
    }

    /**
     * The next page as {@link #insertPage} selects it (due at once, the notification's expiry), except
     * that the first {@code room} recipients of each platform get no row: one
     * {@code notification_handovers} row lists them, leased until {@code leaseEnd}, and they are
     * returned with their device's token and their first attempt counted, for this instance's lane
     * ({@link dev.pushservice.delivery.Handover}); recording inserts their rows with their outcomes.
     * The rest of the page is inserted {@code pending}. The cursor saved with the page keeps a handed
     * device out of every later page. One statement; call it inside a transaction.
     */
    HandedPage insertHandedPage(UUID appId, UUID notificationId, AudienceSql audience, Instant audienceAt,
                                OffsetDateTime cursorAt, UUID cursorId, int pageSize, RenderValues renderValues,
                                Instant now, Instant expiresAt, int[] room, Instant leaseEnd) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        String values = renderValues.sql("p");
        String sql = "with page as (" + pageSql(audience, cursorAt, true) + "), "
                + "ranked as (select p.*, row_number() over (partition by p.platform order by p.created_at desc, p.id)"
                + " <= case p.platform when 'ios' then :room_ios when 'android' then :room_android"
                + " when 'web' then :room_web else 0 end as handed from page p), "
                + "ins as (insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,"
                + " external_user_id, status, next_attempt_at, due_at, expires_at, render_values, updated_at)"
                + " select :notification, p.id, :app, p.platform, p.user_id, u.external_user_id, 'pending', :now, :now,"
                + " :expires_at, " + values + ", :now from ranked p left join users u on u.id = p.user_id"
                + " where not p.handed on conflict (notification_id, device_id) do nothing returning 1), "
                + "hand as (select p.id, p.platform, p.user_id, u.external_user_id, p.token, " + values + " as rv"
                + " from ranked p left join users u on u.id = p.user_id where p.handed), "
                + "ho as (insert into notification_handovers (notification_id, app_id, lease_until, created_at, expires_at,"
                + " handed, device_ids, platforms, user_ids, external_user_ids, render_values)"
                + " select :notification, :app, :lease_end, :now, :expires_at, count(*), array_agg(id), array_agg(platform),"
                + " array_agg(user_id), array_agg(external_user_id), jsonb_object_agg(id::text, rv) filter (where rv is not null)"
                + " from hand having count(*) > 0 returning id), "
                + "summary as (select (select count(*) from page) as selected,"
                + " (select count(*) from ins) + (select count(*) from hand) as inserted,"
                + " (select count(*) from page where platform = 'ios') as selected_ios,"
                + " (select count(*) from page where platform = 'android') as selected_android,"
                + " (select count(*) from page where platform = 'web') as selected_web,"
                + PAGE_END + ") "
                + "select s.*, ho.id as handover_id, h.id as device_id, h.platform, h.user_id, h.external_user_id, h.token,"
                + " h.rv::text as render_values, cast(:notification as uuid) as notification_id, cast(:app as uuid) as app_id,"
                + " 1 as attempts, cast(:expires_at as timestamptz) as expires_at, cast(null as text) as unsendable"
                + " from summary s left join ho on true left join hand h on true";
        var spec = pageStatement(sql, appId, notificationId, audienceAt, cursorAt, cursorId, pageSize, now)
                .param("expires_at", ts(expiresAt)).param("lease_end", ts(leaseEnd))
                .param("room_ios", room[Platform.IOS.ordinal()]).param("room_android", room[Platform.ANDROID.ordinal()])
                .param("room_web", room[Platform.WEB.ordinal()]).params(audience.params());
        List<DeliveryStore.Claimed> handed = new ArrayList<>();
        PageResult[] page = new PageResult[1];
        int[] perPlatform = new int[Platform.values().length];
        spec.query(rs -> {
            if (page[0] == null) {
                page[0] = new PageResult(rs.getInt("selected"), rs.getInt("inserted"),
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
        return new HandedPage(page[0], perPlatform, handed);
    }

    /**
     * Inserts the next page as {@link #insertPage} does, each recipient with the times of its zone:
     * {@code zones} is a JSON array of {@code z} (zone id), {@code d} (due), {@code x} (expiry, or
     * null), {@code e} (null, or the reason it is expired at once). A recipient takes its device's
     * zone, else its user's, else {@code fallback}. One statement. {@code lastDue}: the latest due
     * time of a pending recipient inserted (null when none).
     */
    PageResult insertZoned(UUID appId, UUID notificationId, AudienceSql audience, Instant audienceAt,
                           OffsetDateTime cursorAt, UUID cursorId, int pageSize, RenderValues renderValues, Instant now,
                           String zones, ZonedTimes fallback) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        String values = renderValues.sql("p");
        String pick = "case when md.z is not null then md.%1$s when mu.z is not null then mu.%1$s else :f_%1$s end";
        String sql = "with page as (" + pageSql(audience, cursorAt) + "), "
                + "zones as (select * from jsonb_to_recordset(cast(:zones as jsonb)) as m(z text, d timestamptz, x timestamptz, e text)), "
                + "timed as (select p.*, u.external_user_id, " + values + " as render_values, "
                + pick.formatted("d") + " as due, " + pick.formatted("x") + " as expires, " + pick.formatted("e") + " as gone"
                + " from page p left join users u on u.id = p.user_id left join zones md on md.z = p.timezone"
                + " left join zones mu on mu.z = u.timezone), "
                + "ins as (insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,"
                + " external_user_id, status, last_error, next_attempt_at, due_at, expires_at, render_values, updated_at)"
                + " select :notification, t.id, :app, t.platform, t.user_id, t.external_user_id,"
                + " case when t.gone is null then 'pending' else 'expired' end, t.gone, t.due, t.due, t.expires,"
                + " t.render_values, :now from timed t"
                + " on conflict (notification_id, device_id) do nothing returning due_at, status) "
                + "select (select count(*) from page) as selected, (select count(*) from ins) as inserted,"
                + " (select max(due_at) from ins where status = 'pending') as last_due,"
                + PAGE_END;
        var spec = pageStatement(sql, appId, notificationId, audienceAt, cursorAt, cursorId, pageSize, now)
                .param("zones", zones).param("f_d", ts(fallback.due())).param("f_x", ts(fallback.expiresAt()))
                .param("f_e", fallback.expiredReason()).params(audience.params());
        return spec.query((rs, n) -> new PageResult(rs.getInt("selected"), rs.getInt("inserted"),
                rs.getObject("last_at", OffsetDateTime.class), rs.getObject("last_id", UUID.class),
                instant(rs, "last_due"))).single();
    }

    /** One zone's times for {@link #insertZoned}: due, expiry (or null), the reason it expires at once (or null). */
    record ZonedTimes(Instant due, Instant expiresAt, String expiredReason) {
    }

    /**
     * The next page of the audience, in the order of {@link #insertPage}, as devices with the time
     * zones their send time depends on (the device's, its user's). Nothing is inserted: a page whose
     * recipients' times differ by zone is read here, timed in Java per zone, then written by
     * {@link #insertTimed}. Call it inside a transaction (see {@link #insertPage}).
     */
    List<PageDevice> selectPage(UUID appId, AudienceSql audience, Instant audienceAt, OffsetDateTime cursorAt,
                                UUID cursorId, int pageSize) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        var spec = jdbc.sql("with page as (" + pageSql(audience, cursorAt) + ") "
                        + "select p.id, p.created_at, p.timezone as device_zone, u.timezone as user_zone from page p"
                        + " left join users u on u.id = p.user_id order by p.created_at desc, p.id")
                .param("app", appId).param("audience_at", ts(audienceAt)).param("page_size", pageSize)
                .params(audience.params());
        if (cursorAt != null) spec = spec.param("cursor_at", cursorAt).param("cursor_id", cursorId);
        return spec.query((rs, n) -> new PageDevice(rs.getObject("id", UUID.class),
                rs.getObject("created_at", OffsetDateTime.class), rs.getString("device_zone"), rs.getString("user_zone"))).list();
    }

    /** A device of a page: {@code createdAt} for the cursor, the zones its send time depends on (unchecked names). */
    record PageDevice(UUID id, OffsetDateTime createdAt, String deviceZone, String userZone) {
    }

    /**
     * Recipients of a page read by {@link #selectPage}, each with its own times, in one statement:
     * {@code devices[i]} is due at {@code dueMicros[i]} (epoch microseconds) and expires at
     * {@code expiresMicros[i]} (null: no TTL); a non-null {@code expiredReasons[i]} inserts it already
     * {@code expired} with that reason (held past its TTL: never sent). Returns how many were inserted.
     */
    int insertTimed(UUID appId, UUID notificationId, List<UUID> devices, long[] dueMicros, Long[] expiresMicros,
                    String[] expiredReasons, RenderValues renderValues, Instant now) {
        if (devices.isEmpty()) return 0;
        String values = renderValues.sql("d");
        StringBuilder ids = new StringBuilder("{");
        StringBuilder due = new StringBuilder("{");
        StringBuilder expires = new StringBuilder("{");
        StringBuilder gone = new StringBuilder("{");
        for (int i = 0; i < devices.size(); i++) {
            if (i > 0) {
                ids.append(',');
                due.append(',');
                expires.append(',');
                gone.append(',');
            }
            ids.append(devices.get(i));
            due.append(dueMicros[i]);
            expires.append(expiresMicros[i] == null ? "NULL" : expiresMicros[i].toString());
            gone.append(expiredReasons[i] == null ? "NULL" : expiredReasons[i]);
        }
        return jdbc.sql("insert into notification_recipients (notification_id, device_id, app_id, platform, user_id,"
                        + " external_user_id, status, last_error, next_attempt_at, due_at, expires_at, render_values, updated_at)"
                        + " select :notification, d.id, :app, d.platform, d.user_id, u.external_user_id,"
                        + " case when v.gone is null then 'pending' else 'expired' end, v.gone,"
                        + " to_timestamp(v.due / 1e6), to_timestamp(v.due / 1e6), to_timestamp(v.expires / 1e6), "
                        + values + ", :now"
                        + " from unnest(cast(:ids as uuid[]), cast(:due as bigint[]), cast(:expires as bigint[]),"
                        + " cast(:gone as text[])) as v(id, due, expires, gone)"
                        + " join devices d on d.id = v.id and d.app_id = :app left join users u on u.id = d.user_id"
                        + " on conflict (notification_id, device_id) do nothing")
                .param("notification", notificationId).param("app", appId)
                .param("ids", ids.append('}').toString()).param("due", due.append('}').toString())
                .param("expires", expires.append('}').toString()).param("gone", gone.append('}').toString())
                .param("now", ts(now))
                .update();
    }

    /** Keeps the latest due time given to a recipient of the notification (its expected completion). */
    void extendLastDue(UUID appId, UUID id, Instant due) {
        jdbc.sql("update notifications set last_due_at = greatest(last_due_at, :due) where app_id = :app and id = :id")
                .param("due", ts(due)).param("app", appId).param("id", id).update();
    }

    /**
     * The page query over {@code devices d}: up to {@code :page_size} enabled, non-invalidated
     * devices of the app created at or before {@code :audience_at} that the audience selects, after
     * the cursor, in the order (created_at desc, id) that {@code devices_app_created_idx} reads.
     */
    private static String pageSql(AudienceSql audience, OffsetDateTime cursorAt) {
        return pageSql(audience, cursorAt, false);
    }

    /** The page query, with each device's {@code token} too when {@code token}. */
    private static String pageSql(AudienceSql audience, OffsetDateTime cursorAt, boolean token) {
        String cursor = cursorAt == null ? ""
                // the first condition bounds the index range, the second skips what the cursor's instant already gave
                : " and d.created_at <= :cursor_at and (d.created_at < :cursor_at or d.id > :cursor_id)";
        return "select d.id, d.created_at, d.platform, d.user_id, d.timezone, d.locale" + (token ? ", d.token" : "")
                + " from devices d " + audience.joins()
                + " where d.app_id = :app and d.enabled and d.invalidated_at is null and d.created_at <= :audience_at"
                + cursor + " and (" + audience.predicate() + ")"
                + " order by d.created_at desc, d.id limit :page_size";
    }

    /**
     * How many devices of the app the audience selects now, per platform: the fan-out's selection
     * (enabled, not invalidated, the same compiled SQL) counted in one statement. Call inside a
     * transaction (the compiled filters run with {@link FilterCompiler#WORK_MEM}).
     */
    Map<String, Long> audienceCounts(UUID appId, AudienceSql audience) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        Map<String, Long> counts = new java.util.LinkedHashMap<>();
        jdbc.sql("select d.platform, count(*) as n from devices d " + audience.joins()
                        + " where d.app_id = :app and d.enabled and d.invalidated_at is null and (" + audience.predicate() + ")"
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
                        + " where d.app_id = :app and d.platform = pl.platform and d.enabled and d.invalidated_at is null"
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
                        + " and d.enabled and d.invalidated_at is null and (" + audience.predicate() + ")) as in_audience"
                        + " from devices p left join users u on u.id = p.user_id where p.app_id = :app and p.id = :device")
                .param("app", appId).param("device", deviceId).params(audience.params())
                .query((rs, n) -> new Sample(DeliveryRecipientRepository.claimed(rs, Platform.fromValue(rs.getString("platform")).orElseThrow()),
                        rs.getBoolean("in_audience")))
                .optional();
    }

    /** A device to preview, and whether the notification's audience would reach it. */
    record Sample(DeliveryStore.Claimed recipient, boolean inAudience) {
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
                .param("at", ts(at)).param("app", appId).param("id", id).query(this::row).single();
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

    List<Recipient> recipients(UUID appId, UUID id, PageRequest page) {
        // with the recipients handed over and not recorded yet, as sending
        return jdbc.sql("""
                        select device_id, platform, external_user_id, status, attempts, last_error, updated_at, due_at,
                               expires_at
                        from notification_recipient_states where notification_id = :id and app_id = :app
                        order by device_id limit :limit offset :offset""")
                .param("id", id).param("app", appId).param("limit", page.fetchSize()).param("offset", page.offset())
                .query((rs, n) -> new Recipient(rs.getObject("device_id", UUID.class), rs.getString("platform"),
                        rs.getString("external_user_id"), rs.getString("status"), rs.getInt("attempts"),
                        rs.getString("last_error"), rs.getTimestamp("updated_at").toInstant(), instant(rs, "due_at"),
                        instant(rs, "expires_at")))
                .list();
    }

    /**
     * Up to {@code limit} recipients after the device {@code after}, in device order: a range of the
     * recipients' primary key (and of the few handed over), whatever the depth.
     */
    List<Recipient> recipientsAfter(UUID appId, UUID id, UUID after, int limit) {
        return jdbc.sql("""
                        select device_id, platform, external_user_id, status, attempts, last_error, updated_at, due_at,
                               expires_at
                        from notification_recipient_states where notification_id = :id and app_id = :app and device_id > :after
                        order by device_id limit :limit""")
                .param("id", id).param("app", appId).param("after", after).param("limit", limit)
                .query((rs, n) -> new Recipient(rs.getObject("device_id", UUID.class), rs.getString("platform"),
                        rs.getString("external_user_id"), rs.getString("status"), rs.getInt("attempts"),
                        rs.getString("last_error"), rs.getTimestamp("updated_at").toInstant(), instant(rs, "due_at"),
                        instant(rs, "expires_at")))
                .list();
    }

    private Row row(ResultSet rs, int n) throws SQLException {
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
    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    private static OffsetDateTime ts(Instant at) {
        return at == null ? null : OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }

    /** Audience SQL over a device row {@code d}: {@code joins} after {@code devices d}, {@code predicate} in the WHERE clause. */
    record AudienceSql(String joins, String predicate, Map<String, Object> params) {
    }
}
