package dev.pushservice.webhooks;

import dev.pushservice.platform.pagination.PageRequest;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Collectors;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL for webhooks, their delivery queue and the relay from {@code lifecycle_events}. Statements on
 * one app's data filter by app; the worker statements (relay, claim, outcomes) work across apps by
 * delivery or webhook id. Thread-safe.
 */
@Repository
class WebhookRepository {

    /** The ISO-8601 UTC form of a timestamp column in a built payload. */
    private static final String ISO = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'";

    record Row(UUID id, String url, String description, List<String> events, boolean enabled, String disabledReason,
               Instant createdAt, Instant updatedAt) {
    }

    /** A claimed attempt with what is needed to send it. */
    record Claimed(UUID deliveryId, UUID webhookId, UUID appId, String url, String body, int attempts,
                   byte[] secret, byte[] previousSecret, Instant previousSecretUntil) {
    }

    record DeliveryRow(UUID id, String eventType, String status, int attempts, Integer lastStatusCode, String lastError,
                       Integer lastLatencyMs, Instant lastAttemptAt, Instant nextAttemptAt, Instant createdAt) {
    }

    private final JdbcClient jdbc;

    WebhookRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    private static OffsetDateTime at(Instant i) {
        return i == null ? null : OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        java.sql.Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    private static Row row(ResultSet rs, int n) throws SQLException {
        Array events = rs.getArray("events");
        return new Row(rs.getObject("id", UUID.class), rs.getString("url"), rs.getString("description"),
                List.of((String[]) events.getArray()), rs.getBoolean("enabled"), rs.getString("disabled_reason"),
                instant(rs, "created_at"), instant(rs, "updated_at"));
    }

    private static String textArray(List<String> values) {
        // every value is a catalogue name or '*': no quoting needed
        return values.stream().collect(Collectors.joining(",", "{", "}"));
    }

    void insert(UUID appId, UUID id, String url, String description, List<String> events, boolean enabled,
                byte[] sealedSecret, Instant now) {
        jdbc.sql("""
                        insert into webhooks (id, app_id, url, description, events, enabled, secret, start_after_event,
                                              created_at, updated_at)
                        values (:id, :app, :url, :description, cast(:events as text[]), :enabled, :secret,
                                (select coalesce(max(id), 0) from lifecycle_events), :now, :now)""")
                .param("id", id).param("app", appId).param("url", url).param("description", description)
                .param("events", textArray(events)).param("enabled", enabled).param("secret", sealedSecret)
                .param("now", at(now)).update();
    }

    List<Row> list(UUID appId, PageRequest page) {
        return jdbc.sql("""
                        select id, url, description, events, enabled, disabled_reason, created_at, updated_at
                        from webhooks where app_id = :app order by created_at, id limit :limit offset :offset""")
                .param("app", appId).param("limit", page.fetchSize()).param("offset", page.offset())
                .query(WebhookRepository::row).list();
    }

    Optional<Row> find(UUID appId, UUID id, boolean forUpdate) {
        return jdbc.sql("""
                        select id, url, description, events, enabled, disabled_reason, created_at, updated_at
                        from webhooks where app_id = :app and id = :id""" + (forUpdate ? " for update" : ""))
                .param("app", appId).param("id", id).query(WebhookRepository::row).optional();
    }

    /** The ids among {@code ids} of the app's webhooks. */
    java.util.Set<UUID> existing(UUID appId, java.util.Collection<UUID> ids) {
        return java.util.Set.copyOf(jdbc.sql("select id from webhooks where app_id = :app and id = any(:ids)")
                .param("app", appId).param("ids", ids.toArray(UUID[]::new)).query(UUID.class).list());
    }

    /** Writes the editable fields; re-enabling clears the reason and the failure streak. */
    void update(UUID appId, UUID id, String url, String description, List<String> events, boolean enabled, Instant now) {
        jdbc.sql("""
                        update webhooks set url = :url, description = :description, events = cast(:events as text[]),
                               disabled_reason = case when :enabled then null else disabled_reason end,
                               failing_since = case when :enabled and not enabled then null else failing_since end,
                               enabled = :enabled, updated_at = :now
                        where app_id = :app and id = :id""")
                .param("app", appId).param("id", id).param("url", url).param("description", description)
                .param("events", textArray(events)).param("enabled", enabled).param("now", at(now)).update();
    }

    /** The current secret becomes the previous one, signed with until {@code graceUntil}. */
    void rotate(UUID appId, UUID id, byte[] sealedSecret, Instant graceUntil, Instant now) {
        jdbc.sql("""
                        update webhooks set previous_secret = secret, previous_secret_until = :until,
                               secret = :secret, updated_at = :now
                        where app_id = :app and id = :id""")
                .param("app", appId).param("id", id).param("secret", sealedSecret)
                .param("until", at(graceUntil)).param("now", at(now)).update();
    }

    boolean delete(UUID appId, UUID id) {
        return jdbc.sql("delete from webhooks where app_id = :app and id = :id").param("app", appId).param("id", id).update() == 1;
    }

    void queueTest(UUID appId, UUID webhookId, UUID deliveryId, Instant now) {
        jdbc.sql("""
                        insert into webhook_deliveries (id, app_id, webhook_id, event_type, body, status, next_attempt_at, created_at)
                        values (:id, :app, :webhook, 'webhook.test',
                                json_build_object('type', 'webhook.test', 'timestamp', to_char(cast(:now as timestamptz) at time zone 'UTC', %s),
                                                  'data', json_build_object('webhook_id', cast(:webhook as uuid)))::text,
                                'pending', :now, :now)""".formatted(ISO))
                .param("id", deliveryId).param("app", appId).param("webhook", webhookId).param("now", at(now)).update();
    }

    /**
     * One pending delivery of {@code kind} per data object, due now, in one statement; the body is
     * built here as the relay builds it ({@code type}, {@code timestamp}, {@code data}).
     */
    void queueDirect(UUID appId, UUID webhookId, String kind, List<tools.jackson.databind.JsonNode> data, Instant now) {
        if (data.isEmpty()) return;
        jdbc.sql("""
                        insert into webhook_deliveries (id, app_id, webhook_id, event_type, body, status, next_attempt_at, created_at)
                        select storage_uuid7(cast(:now as timestamptz), null), :app, :webhook, :kind,
                               json_build_object('type', cast(:kind as text),
                                                 'timestamp', to_char(cast(:now as timestamptz) at time zone 'UTC', %s),
                                                 'data', x.data)::text,
                               'pending', :now, :now
                        from jsonb_array_elements(cast(:data as jsonb)) as x(data)""".formatted(ISO))
                .param("app", appId).param("webhook", webhookId).param("kind", kind).param("now", at(now))
                .param("data", tools.jackson.databind.node.JsonNodeFactory.instance.arrayNode().addAll(data).toString())
                .update();
    }

    /** What one relay pass did: facts read, deliveries created, and whether more facts are ready now. */
    record Relayed(int facts, int deliveries, boolean more) {
    }

    /**
     * Takes the relay's one row with {@code SKIP LOCKED}, for this transaction: false when another
     * worker is relaying. {@link #relay} must run after it, in the same transaction, as its own
     * statement: a statement's snapshot taken after the lock sees the state the last holder
     * committed, so the relay's position only moves forward.
     */
    boolean lockRelay() {
        return jdbc.sql("select 1 from webhook_relay where id = 1 for update skip locked").query(Integer.class).optional().isPresent();
    }

    /**
     * One relay pass (after {@link #lockRelay}, same transaction): turns the facts of every
     * transaction that has finished since the last pass into deliveries for every enabled
     * subscribed webhook of their app, and moves the relay's position, in one statement.
     *
     * <p>Why it skips nothing and relays nothing twice: each fact carries the id of the transaction
     * that wrote it ({@code xid}, V31), and all of a transaction's facts become visible at once,
     * when it commits. The position is {@code next_xid} and {@code pending}: every transaction below
     * {@code next_xid} has been relayed except those in {@code pending}, which were running at the
     * last pass. This statement's snapshot says which of those have finished since (every
     * transaction below the snapshot's {@code xmax} and not in its running list); it relays the
     * visible facts of {@code pending} and of {@code [next_xid, hi)}, and stores {@code hi} with the
     * transactions of both that the snapshot saw running. A rolled-back transaction leaves nothing
     * visible and drops out of {@code pending}. {@code hi} is the snapshot's {@code xmax}, or lower
     * when more than {@code batch} facts are waiting: then the first transaction after the
     * {@code batch}-th fact (a transaction's facts are never split, so a pass may read more than
     * {@code batch}). The index on {@code xid} keeps an idle pass to a few index probes.
     *
     * <p>Hot path: writers pay one default ({@code pg_current_xact_id()}) and one index entry per
     * fact; nothing is updated or locked in {@code lifecycle_events}. A delivery's id is made from
     * its fact and webhook (V51), so the primary key stays as a second guard.
     */
    Relayed relay(int batch, Instant now) {
        return jdbc.sql("""
                        with snap as (select pg_current_snapshot() as s),
                        nth as (select e.xid from lifecycle_events e
                                where e.xid >= (select next_xid from webhook_relay where id = 1)
                                order by e.xid offset :batch limit 1),
                        upto as (select least(pg_snapshot_xmax((select s from snap)),
                                              coalesce((select min(e.xid) from lifecycle_events e
                                                        where e.xid > (select xid from nth)),
                                                       pg_snapshot_xmax((select s from snap)))) as hi),
                        facts as (
                            select e.id, e.app_id, e.kind, e.payload, e.occurred_at from lifecycle_events e
                            where e.xid = any(cast((select pending from webhook_relay where id = 1) as xid8[]))
                            union all -- disjoint: pending is below next_xid
                            select e.id, e.app_id, e.kind, e.payload, e.occurred_at from lifecycle_events e
                            where e.xid >= (select next_xid from webhook_relay where id = 1)
                              and e.xid < (select hi from upto)),
                        ins as (
                            insert into webhook_deliveries (id, app_id, webhook_id, lifecycle_event_id, event_type, body,
                                                            status, next_attempt_at, created_at)
                            -- the same id for the same fact and webhook (V51): a second relay of it is refused
                            select storage_uuid7(e.occurred_at, w.id::text || ':' || e.id::text), e.app_id, w.id, e.id, e.kind,
                                   json_build_object('type', e.kind,
                                                     'timestamp', to_char(e.occurred_at at time zone 'UTC', %s),
                                                     'data', e.payload)::text,
                                   'pending', :now, :now
                            from facts e
                            join webhooks w on w.app_id = e.app_id and w.enabled and e.id > w.start_after_event
                                           and (e.kind = any(w.events) or '*' = any(w.events))
                            order by e.id
                            on conflict (id) do nothing
                            returning 1),
                        still as (
                            select array(select x from pg_snapshot_xip((select s from snap)) as x
                                         where x = any(cast((select pending from webhook_relay where id = 1) as xid8[]))
                                            or (x >= (select next_xid from webhook_relay where id = 1)
                                                and x < (select hi from upto))
                                         order by x) as running),
                        moved as (
                            -- written only when facts were relayed or a pending transaction has ended: staying
                            -- put is always safe (the next pass looks at the same range again), and a write at
                            -- every pass would move xmax itself and never let an idle database rest
                            update webhook_relay r set next_xid = (select hi from upto), pending = (select running from still)
                            where r.id = 1 and (exists (select 1 from facts) or not r.pending <@ (select running from still))
                            returning 1)
                        select (select count(*) from facts) as facts, (select count(*) from ins) as deliveries,
                               (select hi from upto) < pg_snapshot_xmax((select s from snap)) as more,
                               (select count(*) from moved) as moved""".formatted(ISO))
                .param("batch", batch).param("now", at(now))
                .query((rs, n) -> new Relayed(rs.getInt("facts"), rs.getInt("deliveries"), rs.getBoolean("more")))
                .single();
    }

    /**
     * Where the claim's round-robin resumes: per app, the endpoint served last (endpoints with a
     * larger id come first next time); and the app served last (apps with a larger id come first).
     * Kept by the one dispatcher thread of an instance; {@link #EMPTY} starts from the smallest ids.
     */
    record Rotation(Map<UUID, UUID> lastEndpointOfApp, UUID lastApp) {
        static final Rotation EMPTY = new Rotation(Map.of(), new UUID(0, 0));
    }

    /**
     * Claims due deliveries fairly across apps and endpoints, at most {@code perEndpoint} per enabled
     * webhook (one while its attempts are failing: a dead endpoint holds one slot, not
     * {@code perEndpoint}, until it answers again) minus what this instance has in flight to it
     * ({@code busy}), and {@code limit} in all; pushes their next attempt forward by the lease, so an
     * attempt lost with its instance is retried once the lease has passed.
     *
     * <p>Fairness: the candidates are each endpoint's oldest due deliveries, numbered per endpoint
     * (its 1st, 2nd, …), then per app in rounds (every endpoint's 1st, then every endpoint's 2nd, …;
     * within a round from just after the endpoint the app was last served by, {@code rotation}),
     * and the claim takes them in rounds across apps (every app's 1st, then 2nd, …, from just after
     * the app served last). So with 200 endpoints with a backlog and 256 free slots every endpoint
     * gets one and 56 a second, and when fewer slots are free than endpoints wait, the next claim
     * goes on where this one stopped, instead of the same endpoints winning every pass. Each
     * endpoint offers at most {@code ceil(limit / endpoints with due work)} candidates, so a pass
     * sorts about {@code max(limit, endpoints)} rows. The candidates are read without locks and only
     * those taken are locked ({@code SKIP LOCKED}, conditions checked again on the locked row), so a
     * delivery another instance claims meanwhile is skipped, never claimed twice.
     *
     * @return the claimed attempts in the order they were taken (the last one of each app and the
     *         last one overall are where the next rotation starts)
     */
    List<Claimed> claim(Map<UUID, Integer> busy, Rotation rotation, int perEndpoint, int limit, Instant now,
                        Instant leaseUntil) {
        UUID[] ids = busy.keySet().toArray(UUID[]::new);
        String idArray = Arrays.stream(ids).map(UUID::toString).collect(Collectors.joining(",", "{", "}"));
        String countArray = Arrays.stream(ids).map(id -> busy.get(id).toString()).collect(Collectors.joining(",", "{", "}"));
        UUID[] apps = rotation.lastEndpointOfApp().keySet().toArray(UUID[]::new);
        String appArray = Arrays.stream(apps).map(UUID::toString).collect(Collectors.joining(",", "{", "}"));
        String lastArray = Arrays.stream(apps).map(a -> rotation.lastEndpointOfApp().get(a).toString())
                .collect(Collectors.joining(",", "{", "}"));
        return jdbc.sql("""
                        with busy as (select * from unnest(cast(:ids as uuid[]), cast(:counts as int[])) as b(webhook_id, n)),
                        served as (select * from unnest(cast(:apps as uuid[]), cast(:lasts as uuid[])) as s(app_id, webhook_id)),
                        active as (
                            select w.id, w.app_id,
                                   case when w.failing_since is null then :per else 1 end
                                   - coalesce((select n from busy where busy.webhook_id = w.id), 0) as free
                            from webhooks w
                            where w.enabled
                              and exists (select 1 from webhook_deliveries d
                                          where d.webhook_id = w.id and d.status = 'pending' and d.next_attempt_at <= :now)),
                        share as (select cast(ceil(cast(:limit as numeric) / greatest(1, count(*))) as int) as n
                                  from active where free > 0),
                        candidates as (
                            select a.app_id, a.id as webhook_id, d.id, d.k from active a
                            cross join lateral (
                                select d.id, row_number() over (order by d.next_attempt_at, d.created_at) as k
                                from webhook_deliveries d
                                where d.webhook_id = a.id and d.status = 'pending' and d.next_attempt_at <= :now
                                order by d.next_attempt_at, d.created_at
                                limit least(a.free, (select n from share))) d
                            where a.free > 0),
                        ranked as (
                            select c.id, c.app_id,
                                   row_number() over (partition by c.app_id
                                                      order by c.k, c.webhook_id <= coalesce(s.webhook_id, :zero), c.webhook_id) as r
                            from candidates c left join served s on s.app_id = c.app_id),
                        picked as (
                            select id, row_number() over (order by r, app_id <= :lastApp, app_id) as ord
                            from ranked order by ord limit :limit),
                        locked as (
                            select d.id, p.ord from webhook_deliveries d join picked p on p.id = d.id
                            where d.status = 'pending' and d.next_attempt_at <= :now
                            for update of d skip locked),
                        claimed as (
                            update webhook_deliveries d set attempts = d.attempts + 1, next_attempt_at = :lease
                            from locked, webhooks w
                            where d.id = locked.id and w.id = d.webhook_id
                            returning d.id, d.webhook_id, w.app_id, w.url, d.body, d.attempts, w.secret, w.previous_secret,
                                      w.previous_secret_until, locked.ord)
                        select * from claimed order by ord""")
                .param("ids", idArray).param("counts", countArray).param("apps", appArray).param("lasts", lastArray)
                .param("zero", new UUID(0, 0)).param("lastApp", rotation.lastApp())
                .param("per", perEndpoint).param("limit", limit)
                .param("now", at(now)).param("lease", at(leaseUntil))
                .query((rs, n) -> new Claimed(rs.getObject("id", UUID.class), rs.getObject("webhook_id", UUID.class),
                        rs.getObject("app_id", UUID.class), rs.getString("url"), rs.getString("body"), rs.getInt("attempts"),
                        rs.getBytes("secret"), rs.getBytes("previous_secret"), instant(rs, "previous_secret_until")))
                .list();
    }

    /** One finished attempt; {@code nextAttemptAt} null with a failure ends the delivery as failed. */
    record Attempt(UUID deliveryId, boolean succeeded, Integer statusCode, String error, long latencyMs,
                   Instant nextAttemptAt, Instant at) {
        String status() {
            return succeeded ? "succeeded" : nextAttemptAt == null ? "failed" : "pending";
        }
    }

    /**
     * Records finished attempts in one statement. A failed attempt whose retry is scheduled (its
     * delivery stays {@code pending}) is also kept, by the same statement, in
     * {@code webhook_delivery_attempts}: the delivery's row holds its last attempt only.
     */
    void recordAttempts(List<Attempt> attempts) {
        if (attempts.isEmpty()) return;
        jdbc.sql("""
                        with written as (
                            update webhook_deliveries d set status = u.status, last_status_code = u.code, last_error = u.error,
                                   last_latency_ms = u.latency, last_attempt_at = u.at,
                                   next_attempt_at = coalesce(u.next, d.next_attempt_at)
                            from unnest(cast(:ids as uuid[]), cast(:statuses as text[]), cast(:codes as int[]),
                                        cast(:errors as text[]), cast(:latencies as int[]), cast(:ats as timestamptz[]),
                                        cast(:nexts as timestamptz[])) as u(id, status, code, error, latency, at, next)
                            where d.id = u.id
                            returning d.id, d.attempts, u.status, u.code, u.error, u.latency, u.at)
                        insert into webhook_delivery_attempts (delivery_id, at, attempt, status_code, error, latency_ms)
                        select w.id, w.at, least(w.attempts, 32767), w.code, w.error, w.latency
                        from written w where w.status = 'pending'""")
                .param("ids", array(attempts, a -> a.deliveryId().toString()))
                .param("statuses", array(attempts, Attempt::status))
                .param("codes", array(attempts, a -> a.statusCode() == null ? null : a.statusCode().toString()))
                .param("errors", array(attempts, Attempt::error))
                .param("latencies", array(attempts, a -> Long.toString(Math.min(Integer.MAX_VALUE, a.latencyMs()))))
                .param("ats", array(attempts, a -> a.at().toString()))
                .param("nexts", array(attempts, a -> a.nextAttemptAt() == null ? null : a.nextAttemptAt().toString()))
                .update();
    }

    /** A PostgreSQL array literal; every element quoted, null as NULL. */
    private static <T> String array(List<T> rows, java.util.function.Function<T, String> value) {
        StringBuilder out = new StringBuilder("{");
        for (T row : rows) {
            if (out.length() > 1) out.append(',');
            String v = value.apply(row);
            if (v == null) out.append("NULL");
            else out.append('"').append(v.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        }
        return out.append('}').toString();
    }

    /** Ends the failure streak of every webhook given (they had a success). */
    void endFailureStreaks(java.util.Collection<UUID> webhookIds) {
        if (webhookIds.isEmpty()) return;
        jdbc.sql("update webhooks set failing_since = null where id = any(cast(:ids as uuid[])) and failing_since is not null")
                .param("ids", webhookIds.stream().map(UUID::toString).collect(Collectors.joining(",", "{", "}"))).update();
    }

    /** Starts or continues the failure streak; returns its start. */
    Instant failing(UUID webhookId, Instant now) {
        return jdbc.sql("update webhooks set failing_since = coalesce(failing_since, :now) where id = :id returning failing_since")
                .param("id", webhookId).param("now", at(now))
                .query((rs, n) -> instant(rs, "failing_since")).optional().orElse(now);
    }

    void disable(UUID webhookId, String reason, Instant now) {
        jdbc.sql("update webhooks set enabled = false, disabled_reason = :reason, updated_at = :now where id = :id and enabled")
                .param("id", webhookId).param("reason", reason).param("now", at(now)).update();
    }

    /** A failed attempt of a delivery that was retried ({@code webhook_delivery_attempts}). */
    record AttemptRow(UUID deliveryId, int attempt, Instant at, Integer statusCode, String error, Integer latencyMs) {
    }

    /**
     * The retried attempts of these deliveries of the app's webhook, oldest first per delivery, in one
     * statement (at most {@code perDelivery} of each: the oldest).
     */
    List<AttemptRow> attempts(UUID appId, UUID webhookId, List<UUID> deliveryIds, int perDelivery) {
        if (deliveryIds.isEmpty()) return List.of();
        return jdbc.sql("""
                        select a.delivery_id, a.attempt, a.at, a.status_code, a.error, a.latency_ms
                        from webhook_deliveries d
                        cross join lateral (select * from webhook_delivery_attempts a
                                            where a.delivery_id = d.id order by a.at, a.attempt limit :per) a
                        where d.id = any(cast(:ids as uuid[])) and d.app_id = :app and d.webhook_id = :webhook
                        order by a.delivery_id, a.at, a.attempt""")
                .param("ids", deliveryIds.stream().map(UUID::toString).collect(Collectors.joining(",", "{", "}")))
                .param("app", appId).param("webhook", webhookId).param("per", perDelivery)
                .query((rs, n) -> new AttemptRow(rs.getObject("delivery_id", UUID.class), rs.getInt("attempt"),
                        instant(rs, "at"), (Integer) rs.getObject("status_code"), rs.getString("error"),
                        (Integer) rs.getObject("latency_ms")))
                .list();
    }

    /** Newest first; {@code offset} rows skipped (pages are bounded by {@code PageRequest}). */
    List<DeliveryRow> deliveries(UUID appId, UUID webhookId, int limit, long offset) {
        return jdbc.sql("""
                        select id, event_type, status, attempts, last_status_code, last_error, last_latency_ms,
                               last_attempt_at, next_attempt_at, created_at
                        from webhook_deliveries where app_id = :app and webhook_id = :webhook
                        order by created_at desc, id limit :limit offset :offset""")
                .param("app", appId).param("webhook", webhookId).param("limit", limit).param("offset", offset)
                .query((rs, n) -> new DeliveryRow(rs.getObject("id", UUID.class), rs.getString("event_type"),
                        rs.getString("status"), rs.getInt("attempts"), (Integer) rs.getObject("last_status_code"),
                        rs.getString("last_error"), (Integer) rs.getObject("last_latency_ms"), instant(rs, "last_attempt_at"),
                        "pending".equals(rs.getString("status")) ? instant(rs, "next_attempt_at") : null,
                        instant(rs, "created_at")))
                .list();
    }
}
