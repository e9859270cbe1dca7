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
    record Claimed(UUID deliveryId, UUID webhookId, String url, String body, int attempts,
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
                        select gen_random_uuid(), :app, :webhook, :kind,
                               json_build_object('type', cast(:kind as text),
                                                 'timestamp', to_char(cast(:now as timestamptz) at time zone 'UTC', %s),
                                                 'data', x.data)::text,
                               'pending', :now, :now
                        from jsonb_array_elements(cast(:data as jsonb)) as x(data)""".formatted(ISO))
                .param("app", appId).param("webhook", webhookId).param("kind", kind).param("now", at(now))
                .param("data", tools.jackson.databind.node.JsonNodeFactory.instance.arrayNode().addAll(data).toString())
                .update();
    }

    /**
     * One relay pass: turns the facts after the cursor (and a re-read window of {@code reread} ids
     * behind it, for facts whose transaction committed after a larger id was read) into deliveries for
     * every enabled subscribed webhook of their app, in one statement, then moves the cursor. The
     * cursor row is taken with {@code SKIP LOCKED}: with several workers one relays and the others
     * skip; the unique {@code (webhook_id, lifecycle_event_id)} makes re-reading idempotent.
     *
     * @return deliveries created, or -1 when another worker holds the cursor
     */
    int relay(int batch, int reread, Instant now) {
        return jdbc.sql("""
                        with cursor as (select last_id from webhook_relay where id = 1 for update skip locked),
                        upto as (select least(coalesce((select max(id) from lifecycle_events), 0),
                                              (select last_id from cursor) + :batch) as hi),
                        ins as (
                            insert into webhook_deliveries (id, app_id, webhook_id, lifecycle_event_id, event_type, body,
                                                            status, next_attempt_at, created_at)
                            select gen_random_uuid(), e.app_id, w.id, e.id, e.kind,
                                   json_build_object('type', e.kind,
                                                     'timestamp', to_char(e.occurred_at at time zone 'UTC', %s),
                                                     'data', e.payload)::text,
                                   'pending', :now, :now
                            from cursor c cross join upto u
                            join lifecycle_events e on e.id > c.last_id - :reread and e.id <= u.hi
                            join webhooks w on w.app_id = e.app_id and w.enabled and e.id > w.start_after_event
                                           and (e.kind = any(w.events) or '*' = any(w.events))
                            order by e.id
                            on conflict (webhook_id, lifecycle_event_id) do nothing
                            returning 1),
                        moved as (
                            update webhook_relay set last_id = (select hi from upto)
                            where id = 1 and (select hi from upto) > (select last_id from cursor)
                            returning 1)
                        select case when exists (select 1 from cursor) then (select count(*) from ins)
                                    + 0 * (select count(*) from moved) else -1 end""".formatted(ISO))
                .param("batch", batch).param("reread", reread).param("now", at(now))
                .query(Integer.class).single();
    }

    /**
     * Claims due deliveries, at most {@code perEndpoint} per enabled webhook (one while its attempts
     * are failing: a dead endpoint holds one slot, not {@code perEndpoint}, until it answers again)
     * minus what this instance has in flight to it ({@code busy}), and {@code limit} in all; pushes
     * their next attempt forward by the lease, so an attempt lost with its instance is retried once
     * the lease has passed.
     */
    List<Claimed> claim(Map<UUID, Integer> busy, int perEndpoint, int limit, Instant now, Instant leaseUntil) {
        UUID[] ids = busy.keySet().toArray(UUID[]::new);
        String idArray = Arrays.stream(ids).map(UUID::toString).collect(Collectors.joining(",", "{", "}"));
        String countArray = Arrays.stream(ids).map(id -> busy.get(id).toString()).collect(Collectors.joining(",", "{", "}"));
        return jdbc.sql("""
                        with busy as (select * from unnest(cast(:ids as uuid[]), cast(:counts as int[])) as b(webhook_id, n)),
                        due as (
                            select d.id from webhooks w
                            cross join lateral (
                                select d.id from webhook_deliveries d
                                where d.webhook_id = w.id and d.status = 'pending' and d.next_attempt_at <= :now
                                order by d.next_attempt_at, d.created_at
                                limit greatest(0, case when w.failing_since is null then :per else 1 end
                                                  - coalesce((select n from busy where busy.webhook_id = w.id), 0))
                                for update of d skip locked) d
                            where w.enabled
                            limit :limit)
                        update webhook_deliveries d set attempts = d.attempts + 1, next_attempt_at = :lease
                        from due, webhooks w
                        where d.id = due.id and w.id = d.webhook_id
                        returning d.id, d.webhook_id, w.url, d.body, d.attempts, w.secret, w.previous_secret, w.previous_secret_until""")
                .param("ids", idArray).param("counts", countArray).param("per", perEndpoint).param("limit", limit)
                .param("now", at(now)).param("lease", at(leaseUntil))
                .query((rs, n) -> new Claimed(rs.getObject("id", UUID.class), rs.getObject("webhook_id", UUID.class),
                        rs.getString("url"), rs.getString("body"), rs.getInt("attempts"), rs.getBytes("secret"),
                        rs.getBytes("previous_secret"), instant(rs, "previous_secret_until")))
                .list();
    }

    /** One finished attempt; {@code nextAttemptAt} null with a failure ends the delivery as failed. */
    record Attempt(UUID deliveryId, boolean succeeded, Integer statusCode, String error, long latencyMs,
                   Instant nextAttemptAt, Instant at) {
        String status() {
            return succeeded ? "succeeded" : nextAttemptAt == null ? "failed" : "pending";
        }
    }

    /** Records finished attempts in one statement. */
    void recordAttempts(List<Attempt> attempts) {
        if (attempts.isEmpty()) return;
        jdbc.sql("""
                        update webhook_deliveries d set status = u.status, last_status_code = u.code, last_error = u.error,
                               last_latency_ms = u.latency, last_attempt_at = u.at,
                               next_attempt_at = coalesce(u.next, d.next_attempt_at)
                        from unnest(cast(:ids as uuid[]), cast(:statuses as text[]), cast(:codes as int[]),
                                    cast(:errors as text[]), cast(:latencies as int[]), cast(:ats as timestamptz[]),
                                    cast(:nexts as timestamptz[])) as u(id, status, code, error, latency, at, next)
                        where d.id = u.id""")
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

    List<DeliveryRow> recentDeliveries(UUID appId, UUID webhookId, int limit) {
        return jdbc.sql("""
                        select id, event_type, status, attempts, last_status_code, last_error, last_latency_ms,
                               last_attempt_at, next_attempt_at, created_at
                        from webhook_deliveries where app_id = :app and webhook_id = :webhook
                        order by created_at desc, id limit :limit""")
                .param("app", appId).param("webhook", webhookId).param("limit", limit)
                .query((rs, n) -> new DeliveryRow(rs.getObject("id", UUID.class), rs.getString("event_type"),
                        rs.getString("status"), rs.getInt("attempts"), (Integer) rs.getObject("last_status_code"),
                        rs.getString("last_error"), (Integer) rs.getObject("last_latency_ms"), instant(rs, "last_attempt_at"),
                        "pending".equals(rs.getString("status")) ? instant(rs, "next_attempt_at") : null,
                        instant(rs, "created_at")))
                .list();
    }
}
