package dev.pushservice.events;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.platform.auth.Scope;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

class EventTests extends ApiTest {

    private static final List<String> TYPES =
            List.of("received", "delivered", "confirmed_delivered", "opened", "clicked", "dismissed", "custom", "outcome");

    @Autowired
    JdbcClient jdbc;

    TestApi.Response submit(String key, String body) {
        return api.post("/v1/events", key, body);
    }

    String device(TestApp app, String externalUserId) {
        String user = externalUserId == null ? "" : ",\"external_user_id\":\"" + externalUserId + "\"";
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"" + user + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("device_id").asString();
    }

    long events(TestApp app) {
        return jdbc.sql("select count(*) from events where app_id = :app").param("app", app.appId()).query(Long.class).single();
    }

    long counted(TestApp app) {
        return jdbc.sql("select coalesce(sum(count), 0) from event_daily_counts where app_id = :app")
                .param("app", app.appId()).query(Long.class).single();
    }

    static List<String> fields(TestApi.Response r) {
        return r.json().path("error").path("details").findValuesAsString("field");
    }

    @Test
    void everyEventTypeIsCommittedBeforeTheAnswer() {
        TestApp app = newApp();
        String device = device(app, "ada");
        UUID userId = jdbc.sql("select user_id from devices where id = :id").param("id", UUID.fromString(device))
                .query(UUID.class).single();
        // a notification of the app (events naming any other are refused: NotificationTests)
        TestApi.Response created = api.send(api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                        "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}")));
        assertThat(created.status()).as(created.toString()).isEqualTo(202);
        String notification = created.json().path("notification_id").asString();
        for (String type : TYPES) {
            String name = type.equals("custom") || type.equals("outcome") ? ",\"event_name\":\"" + type + ".thing-1\"" : "";
            TestApi.Response r = submit(app.publicKey(), "{\"event_type\":\"" + type + "\"" + name + ",\"device_id\":\"" + device
                    + "\",\"notification_id\":\"" + notification + "\",\"metadata\":{\"button\":\"buy\",\"n\":[1,2.5,null]},"
                    + "\"occurred_at\":\"2020-01-01T00:00:00Z\"".replace("2020-01-01T00:00:00Z",
                    OffsetDateTime.now(ZoneOffset.ofHoursMinutes(5, 30)).minusHours(1).toString()) + "}");
            assertThat(r.status()).as(type + " -> " + r).isEqualTo(202);
            UUID id = UUID.fromString(r.json().path("event_id").asString());
            // right after the 202, without waiting: the row is committed
            Map<String, Object> row = jdbc.sql("""
                            select event_type, event_name, device_id, user_id, notification_id, metadata::text as metadata
                            from events where app_id = :app and id = :id""")
                    .param("app", app.appId()).param("id", id).query().singleRow();
            assertThat(row.get("event_type")).isEqualTo(type);
            assertThat(row.get("event_name")).isEqualTo(name.isEmpty() ? null : type + ".thing-1");
            assertThat(row.get("device_id")).isEqualTo(UUID.fromString(device));
            assertThat(row.get("user_id")).isEqualTo(userId);
            assertThat(row.get("notification_id")).isEqualTo(UUID.fromString(notification));
            assertThat((String) row.get("metadata")).contains("\"button\": \"buy\"").contains("2.5");
        }
        assertThat(events(app)).isEqualTo(TYPES.size());
        assertThat(counted(app)).isEqualTo(TYPES.size());
        List<String> keys = jdbc.sql("select event_key from device_event_last where app_id = :app order by event_key")
                .param("app", app.appId()).query(String.class).list();
        assertThat(keys).containsExactlyInAnyOrder("received", "delivered", "confirmed_delivered", "opened", "clicked",
                "dismissed", "custom:custom.thing-1", "outcome");
    }

    @Test
    void occurredAtDefaultsToReceiptAndKeepsTheInstantOfAnyOffset() {
        TestApp app = newApp();
        Instant before = Instant.now().truncatedTo(ChronoUnit.MICROS);
        String bare = submit(app.serverKey(), "{\"event_type\":\"opened\"}").json().path("event_id").asString();
        Instant after = Instant.now();
        Instant stored = occurredAt(app, bare);
        assertThat(stored).isBetween(before.minusMillis(1), after);

        Instant hourAgo = Instant.now().minus(1, ChronoUnit.HOURS).truncatedTo(ChronoUnit.MICROS);
        String offset = hourAgo.atOffset(ZoneOffset.ofHoursMinutes(-9, -30)).toString();
        TestApi.Response r = submit(app.serverKey(), "{\"event_type\":\"opened\",\"occurred_at\":\"" + offset + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(occurredAt(app, r.json().path("event_id").asString())).isEqualTo(hourAgo);
    }

    Instant occurredAt(TestApp app, String id) {
        return jdbc.sql("select occurred_at from events where app_id = :app and id = :id")
                .param("app", app.appId()).param("id", UUID.fromString(id))
                .query((rs, n) -> rs.getObject(1, OffsetDateTime.class).toInstant()).single();
    }

    @Test
    void customAndOutcomeNeedANameAndOtherTypesRefuseOne() {
        TestApp app = newApp();
        for (String body : List.of("{\"event_type\":\"custom\"}", "{\"event_type\":\"outcome\",\"event_name\":null}",
                "{\"event_type\":\"opened\",\"event_name\":\"x\"}", "{\"event_type\":\"custom\",\"event_name\":\"\"}",
                "{\"event_type\":\"custom\",\"event_name\":\"has space\"}", "{\"event_type\":\"custom\",\"event_name\":\"a\\u0000b\"}",
                "{\"event_type\":\"custom\",\"event_name\":\"" + "n".repeat(101) + "\"}",
                "{\"event_type\":\"custom\",\"event_name\":\"caf\u00e9\"}")) {
            TestApi.Response r = submit(app.publicKey(), body);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(body).containsExactly("event_name");
        }
        assertThat(submit(app.publicKey(), "{\"event_type\":\"custom\",\"event_name\":\"" + "n".repeat(100) + "\"}").status())
                .isEqualTo(202);
        assertThat(events(app)).isEqualTo(1);
    }

    @Test
    void unknownTypeIsRejected() {
        TestApp app = newApp();
        for (String body : List.of("{\"event_type\":\"purchase\"}", "{\"event_type\":\"OPENED\"}", "{\"event_type\":\"\"}",
                "{\"event_type\":5}", "{\"event_type\":null}", "{}", "{\"event_type\":[\"opened\"]}")) {
            TestApi.Response r = submit(app.publicKey(), body);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(body).contains("event_type");
        }
        assertThat(events(app)).isZero();
    }

    @Test
    void deviceOfAnotherAppOrUnknownIsRejectedAndNothingIsStored() {
        TestApp app = newApp();
        TestApp other = newApp();
        String foreign = device(other, null);
        for (String id : List.of(foreign, UUID.randomUUID().toString())) {
            TestApi.Response r = submit(app.publicKey(), "{\"event_type\":\"opened\",\"device_id\":\"" + id + "\"}");
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).containsExactly("device_id");
        }
        assertThat(events(app)).isZero();
        assertThat(events(other)).isZero();
        assertThat(counted(app)).isZero();
        assertThat(jdbc.sql("select count(*) from device_event_last where device_id = :d").param("d", UUID.fromString(foreign))
                .query(Long.class).single()).isZero();
    }

    @Test
    void eventsOfADisabledDeviceAreStillRecorded() {
        TestApp app = newApp();
        String device = device(app, null);
        assertThat(api.delete("/v1/devices/" + device, app.publicKey()).status()).isEqualTo(200);
        assertThat(submit(app.publicKey(), "{\"event_type\":\"dismissed\",\"device_id\":\"" + device + "\"}").status()).isEqualTo(202);
        assertThat(events(app)).isEqualTo(1);
    }

    @Test
    void everyFieldOfTheWrongTypeOrShapeIsNamed() {
        TestApp app = newApp();
        record Case(String fields, String field) {
        }
        List<Case> cases = List.of(
                new Case("\"notification_id\":\"not-a-uuid\"", "notification_id"),
                new Case("\"notification_id\":42", "notification_id"),
                new Case("\"notification_id\":\"" + UUID.randomUUID().toString().replace("-", "") + "\"", "notification_id"),
                new Case("\"device_id\":\"zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz\"", "device_id"),
                new Case("\"device_id\":{}", "device_id"),
                new Case("\"device_id\":true", "device_id"),
                new Case("\"event_name\":7", "event_name"),
                new Case("\"metadata\":\"{}\"", "metadata"),
                new Case("\"metadata\":[1]", "metadata"),
                new Case("\"metadata\":3", "metadata"),
                new Case("\"occurred_at\":1714564800", "occurred_at"),
                new Case("\"occurred_at\":\"yesterday\"", "occurred_at"),
                new Case("\"occurred_at\":\"2025-05-01\"", "occurred_at"),
                new Case("\"occurred_at\":\"2025-05-01T12:00:00\"", "occurred_at"),
                new Case("\"occurred_at\":\"2025-13-01T12:00:00Z\"", "occurred_at"),
                new Case("\"occurred_at\":\"" + Instant.now().plus(10, ChronoUnit.MINUTES) + "\"", "occurred_at"),
                new Case("\"occurred_at\":\"" + Instant.now().minus(31, ChronoUnit.DAYS) + "\"", "occurred_at"));
        for (Case c : cases) {
            // each key once: a key given twice is a 400 of its own (RequestPathTests)
            String name = c.fields().startsWith("\"event_name\"") ? "" : "\"event_name\":\"ok\",";
            String body = "{\"event_type\":\"custom\"," + name + c.fields() + "}";
            TestApi.Response r = submit(app.publicKey(), body);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(body).containsExactly(c.field());
        }
        TestApi.Response all = submit(app.publicKey(), "{\"event_type\":1,\"event_name\":2,\"device_id\":3,\"notification_id\":4,"
                + "\"metadata\":5,\"occurred_at\":6}");
        assertThat(fields(all)).containsExactlyInAnyOrder("event_type", "event_name", "device_id", "notification_id",
                "metadata", "occurred_at");
        assertError(submit(app.publicKey(), "[{\"event_type\":\"opened\"}]"), 400, "malformed_request");
        assertThat(events(app)).isZero();
        // the limits themselves are accepted
        assertThat(submit(app.publicKey(), "{\"event_type\":\"opened\",\"occurred_at\":\""
                + Instant.now().plus(4, ChronoUnit.MINUTES) + "\"}").status()).isEqualTo(202);
        assertThat(submit(app.publicKey(), "{\"event_type\":\"opened\",\"occurred_at\":\""
                + Instant.now().minus(29, ChronoUnit.DAYS) + "\"}").status()).isEqualTo(202);
    }

    @Test
    void metadataIsCappedAtSixteenKibAndMustBeStorable() {
        TestApp app = newApp();
        String prefix = "{\"event_type\":\"opened\",\"metadata\":{\"v\":\"";
        // {"v":"…"} compact is 8 bytes plus the value
        String fits = prefix + "x".repeat(16 * 1024 - 8) + "\"}}";
        String tooBig = prefix + "x".repeat(16 * 1024 - 7) + "\"}}";
        assertThat(submit(app.publicKey(), fits).status()).isEqualTo(202);
        // one rule for every body (platform.json.StorableText): the detail names the string or key
        Map<String, String> bodies = Map.of(tooBig, "metadata", prefix + "a\\u0000b\"}}", "metadata.v",
                prefix + "\\ud800\"}}", "metadata.v",
                "{\"event_type\":\"opened\",\"metadata\":{\"k\\u0000\":1}}", "metadata.k\\u0000",
                "{\"event_type\":\"opened\",\"metadata\":{\"deep\":[{\"x\":\"\\udc00\"}]}}", "metadata.deep[0].x");
        bodies.forEach((body, field) -> {
            TestApi.Response r = submit(app.publicKey(), body);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(body).containsExactly(field);
        });
        assertThat(events(app)).isEqualTo(1);
    }

    @Test
    void publicKeyMaySubmitAndScopesAreEnforced() {
        TestApp app = newApp();
        assertThat(submit(app.publicKey(), "{\"event_type\":\"received\"}").status()).isEqualTo(202);
        assertError(submit(serverKey(app, Scope.NOTIFICATIONS_READ), "{\"event_type\":\"received\"}"), 403, "forbidden");
        assertThat(submit(serverKey(app, Scope.EVENTS_WRITE), "{\"event_type\":\"received\"}").status()).isEqualTo(202);
        assertError(submit(null, "{\"event_type\":\"received\"}"), 401, "unauthorized");
        assertThat(events(app)).isEqualTo(2);
    }

    @Test
    void concurrentEventsAreStoredExactlyOnceWithExactCounts() throws Exception {
        TestApp app = newApp();
        List<String> devices = new ArrayList<>();
        for (int i = 0; i < 10; i++) devices.add(device(app, i % 2 == 0 ? "user-" + i : null));
        int total = 2_000;
        ExecutorService pool = Executors.newFixedThreadPool(32);
        List<Future<TestApi.Response>> results = new ArrayList<>();
        for (int i = 0; i < total; i++) {
            String type = TYPES.get(i % TYPES.size());
            String name = type.equals("custom") ? ",\"event_name\":\"c" + (i % 3) + "\"" : type.equals("outcome") ? ",\"event_name\":\"o\"" : "";
            String device = i % 4 == 0 ? "" : ",\"device_id\":\"" + devices.get(i % devices.size()) + "\"";
            String body = "{\"event_type\":\"" + type + "\"" + name + device + "}";
            results.add(pool.submit(() -> submit(app.publicKey(), body)));
        }
        List<String> ids = new ArrayList<>();
        for (Future<TestApi.Response> f : results) {
            TestApi.Response r = f.get(60, TimeUnit.SECONDS);
            assertThat(r.status()).as(r.toString()).isEqualTo(202);
            ids.add(r.json().path("event_id").asString());
        }
        pool.shutdown();
        assertThat(ids).doesNotHaveDuplicates().hasSize(total);
        List<UUID> stored = jdbc.sql("select id from events where app_id = :app").param("app", app.appId()).query(UUID.class).list();
        assertThat(stored).hasSize(total).doesNotHaveDuplicates();
        assertThat(stored.stream().map(UUID::toString).toList()).containsExactlyInAnyOrderElementsOf(ids);
        assertThat(counted(app)).isEqualTo(total);
        List<Map<String, Object>> byType = jdbc.sql("""
                        select event_type, event_name, sum(count) as n from event_daily_counts where app_id = :app
                        group by event_type, event_name""")
                .param("app", app.appId()).query().listOfRows();
        for (Map<String, Object> row : byType) {
            long expected = jdbc.sql("select count(*) from events where app_id = :app and event_type = :t and coalesce(event_name, '') = :n")
                    .param("app", app.appId()).param("t", row.get("event_type")).param("n", row.get("event_name"))
                    .query(Long.class).single();
            assertThat(((Number) row.get("n")).longValue()).as(row.toString()).isEqualTo(expected).isPositive();
        }
        assertThat(byType).hasSize(TYPES.size() - 2 + 3 + 1);
        long lastRowsMismatched = jdbc.sql("""
                        select count(*) from (
                          select device_id, case when event_type = 'custom' then 'custom:' || event_name else event_type end as k,
                                 max(occurred_at) as last_at
                          from events where app_id = :app and device_id is not null group by 1, 2) e
                        full join (select * from device_event_last where app_id = :app) d
                          on d.device_id = e.device_id and d.event_key = e.k
                        where d.last_at is distinct from e.last_at""")
                .param("app", app.appId()).query(Long.class).single();
        assertThat(lastRowsMismatched).isZero();
    }

    @Test
    void deviceEventLastKeepsTheLatestOccurrence() {
        TestApp app = newApp();
        String device = device(app, null);
        Instant newer = Instant.now().minus(1, ChronoUnit.HOURS).truncatedTo(ChronoUnit.MICROS);
        Instant older = newer.minus(2, ChronoUnit.DAYS);
        for (Instant at : List.of(newer, older)) {
            assertThat(submit(app.publicKey(), "{\"event_type\":\"custom\",\"event_name\":\"Purchase\",\"device_id\":\"" + device
                    + "\",\"occurred_at\":\"" + at + "\"}").status()).isEqualTo(202);
        }
        Instant last = jdbc.sql("select last_at from device_event_last where app_id = :app and device_id = :d and event_key = 'custom:Purchase'")
                .param("app", app.appId()).param("d", UUID.fromString(device))
                .query((rs, n) -> rs.getObject(1, OffsetDateTime.class).toInstant()).single();
        assertThat(last).isEqualTo(newer);
    }

    /**
     * A batch that fails in the database fails only the event at fault (500) and writes nothing of
     * it anywhere; the events that shared its batch are written. A trigger makes one event name fail.
     */
    @Test
    void aFailingEventGets500AndLeavesNoTraceWhileOthersAreStored() throws Exception {
        TestApp app = newApp();
        String device = device(app, null);
        jdbc.sql("""
                create or replace function test_poison_event() returns trigger language plpgsql as $$
                begin raise exception 'poisoned event' using errcode = '22023'; end $$""").update();
        jdbc.sql("create trigger test_poison_event before insert on events for each row "
                + "when (new.event_name = 'test-poison') execute function test_poison_event()").update();
        try {
            ExecutorService pool = Executors.newFixedThreadPool(16);
            List<Future<TestApi.Response>> good = new ArrayList<>();
            List<Future<TestApi.Response>> bad = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                boolean poison = i % 50 == 7;
                String body = "{\"event_type\":\"custom\",\"event_name\":\"" + (poison ? "test-poison" : "fine")
                        + "\",\"device_id\":\"" + device + "\"}";
                (poison ? bad : good).add(pool.submit(() -> submit(app.publicKey(), body)));
            }
            for (Future<TestApi.Response> f : good) assertThat(f.get(60, TimeUnit.SECONDS).status()).isEqualTo(202);
            for (Future<TestApi.Response> f : bad) assertError(f.get(60, TimeUnit.SECONDS), 500, "internal_error");
            pool.shutdown();
        } finally {
            jdbc.sql("drop trigger test_poison_event on events").update();
            jdbc.sql("drop function test_poison_event()").update();
        }
        assertThat(events(app)).isEqualTo(196);
        assertThat(counted(app)).isEqualTo(196);
        List<String> keys = jdbc.sql("select event_key from device_event_last where app_id = :app").param("app", app.appId())
                .query(String.class).list();
        assertThat(keys).containsExactly("custom:fine");
    }

    @Test
    void eventIdIsTheOnlyFieldOfTheAnswer() {
        TestApp app = newApp();
        JsonNode body = submit(app.publicKey(), "{\"event_type\":\"clicked\",\"unknown_field\":1}").json();
        assertThat(body.propertyNames()).containsExactly("event_id");
    }
}
