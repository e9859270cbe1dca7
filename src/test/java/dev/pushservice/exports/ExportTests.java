package dev.pushservice.exports;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.pushservice.support.TestTokens;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.StringReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.zip.GZIPInputStream;
import org.apache.commons.csv.CSVFormat;
import org.apache.commons.csv.CSVParser;
import org.apache.commons.csv.CSVRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * Exports through the API: each data type end to end (created, written by the worker, downloaded
 * and parsed), gzip, expiry by the application clock, recovery from an interrupted run, tenancy and
 * bad input.
 */
class ExportTests extends ApiTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Autowired
    TestClock clock;
    @Autowired
    JdbcClient jdbc;
    @Autowired
    ExportWriter writer;

    @AfterEach
    void resetClock() {
        clock.reset();
    }

    // --- helpers -------------------------------------------------------------------------------

    private record Device(UUID id, String token) {
    }

    private Device register(TestApp app, String platform, String extra) {
        String token = platform.equals("ios") ? TestTokens.apns() : TestTokens.fcm();
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"" + platform + "\",\"push_token\":\"" + token + "\"" + extra + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return new Device(UUID.fromString(r.json().path("device_id").asString()), token);
    }


    private String export(TestApp app, String body) {
        TestApi.Response r = api.post("/v1/exports", app.serverKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("status").asString()).isEqualTo("pending");
        return r.json().path("export_id").asString();
    }

    private JsonNode listed(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/exports?limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        for (JsonNode e : r.json().path("data")) if (e.path("export_id").asString().equals(id)) return e;
        throw new AssertionError("export " + id + " not listed: " + r);
    }

    private JsonNode completed(TestApp app, String id) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
            String status = listed(app, id).path("status").asString();
            assertThat(status).isIn("pending", "running", "completed");
            return status.equals("completed");
        });
        return listed(app, id);
    }

    private TestApi.Response download(TestApp app, String id) {
        return api.get("/v1/exports/" + id + "/download", app.serverKey());
    }

    /** Completes the export, downloads it, checks the file's framing and returns its records (header first). */
    private List<CSVRecord> file(TestApp app, String id, ExportType type) throws IOException {
        JsonNode done = completed(app, id);
        TestApi.Response r = download(app, id);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.header("Content-Type").orElseThrow()).startsWith("text/csv");
        assertThat(r.header("Content-Disposition").orElseThrow())
                .isEqualTo("attachment; filename=\"export-" + type.value() + "-" + id + ".csv\"");
        assertThat(r.header("Content-Encoding")).isEmpty();
        assertThat((long) r.body().getBytes(StandardCharsets.UTF_8).length).isEqualTo(done.path("size_bytes").asLong());
        List<CSVRecord> records;
        try (CSVParser parser = CSVParser.parse(new StringReader(r.body()), CSVFormat.RFC4180)) {
            records = parser.getRecords();
        }
        assertThat(records.getFirst().toList()).isEqualTo(type.columns());
        assertThat(records).allSatisfy(rec -> assertThat(rec.size()).isEqualTo(type.columns().size()));
        assertThat(done.path("row_count").asLong()).isEqualTo(records.size() - 1);
        assertThat(done.path("expires_at").asString())
                .isEqualTo(Instant.parse(done.path("completed_at").asString()).plus(Duration.ofHours(24)).toString());
        return records;
    }

    private static Map<String, String> row(List<CSVRecord> records, int index) {
        List<String> header = records.getFirst().toList();
        CSVRecord rec = records.get(index);
        Map<String, String> m = new java.util.HashMap<>();
        for (int i = 0; i < header.size(); i++) m.put(header.get(i), rec.get(i));
        return m;
    }

    private static List<Map<String, String>> rows(List<CSVRecord> records) {
        List<Map<String, String>> all = new ArrayList<>();
        for (int i = 1; i < records.size(); i++) all.add(row(records, i));
        return all;
    }

    private String notification(TestApp app) {
        HttpRequest.Builder b = api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"Hello\",\"body\":\"World\",\"target\":{\"type\":\"all\"}}"));
        TestApi.Response r = api.send(b);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }

    private long exportsOf(TestApp app) {
        return jdbc.sql("select count(*) from exports where app_id = :app").param("app", app.appId()).query(Long.class).single();
    }

    // --- each data type ------------------------------------------------------------------------

    @Test
    void audienceExportListsEveryDeviceWithoutItsToken() throws IOException {
        TestApp app = newApp();
        Device a = register(app, "ios", ",\"external_user_id\":\"user, \\\"quoted\\\"\",\"tags\":{\"plan\":\"gold\"},\"locale\":\"de-DE\"");
        Device b = register(app, "android", "");
        Device c = register(app, "ios", "");
        register(newApp(), "ios", ""); // another app's device never appears

        String id = export(app, "{\"type\":\"audience\"}");
        List<CSVRecord> records = file(app, id, ExportType.AUDIENCE);
        List<Map<String, String>> rows = rows(records);
        assertThat(rows).extracting(r -> r.get("device_id"))
                .containsExactlyInAnyOrder(a.id().toString(), b.id().toString(), c.id().toString());
        Map<String, String> first = rows.stream().filter(r -> r.get("device_id").equals(a.id().toString())).findFirst().orElseThrow();
        assertThat(first.get("platform")).isEqualTo("ios");
        assertThat(first.get("external_user_id")).isEqualTo("user, \"quoted\"");
        assertThat(first.get("locale")).isEqualTo("de-DE");
        assertThat(first.get("enabled")).isEqualTo("true");
        assertThat(first.get("tags")).contains("\"plan\"", "\"gold\"");
        assertThat(Instant.parse(first.get("created_at"))).isBefore(Instant.now().plusSeconds(1));
        String body = download(app, id).body();
        for (Device d : List.of(a, b, c)) assertThat(body).doesNotContain(d.token());
    }

    @Test
    void audienceExportOfASegmentHoldsOnlyItsDevices() throws IOException {
        TestApp app = newApp();
        register(app, "ios", "");
        Device android = register(app, "android", "");
        TestApi.Response s = api.post("/v1/segments", app.serverKey(),
                "{\"name\":\"androids\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}}");
        assertThat(s.status()).as(s.toString()).isEqualTo(201);
        String segment = s.json().path("segment_id").asString();

        String id = export(app, "{\"type\":\"audience\",\"segment_id\":\"" + segment + "\"}");
        assertThat(listed(app, id).path("filters").path("segment_id").asString()).isEqualTo(segment);
        List<Map<String, String>> rows = rows(file(app, id, ExportType.AUDIENCE));
        assertThat(rows).extracting(r -> r.get("device_id")).containsExactly(android.id().toString());
    }

    @Test
    void messageAndRecipientExportsMatchWhatTheApiReports() throws IOException {
        TestApp app = newApp();
        Device a = register(app, "ios", ",\"external_user_id\":\"ada\"");
        Device b = register(app, "android", "");
        String first = notification(app);
        String second = notification(app);
        for (String n : List.of(first, second)) {
            // terminal: every recipient's status is final, so the file and the API agree
            await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> Set.of("completed", "failed", "cancelled")
                    .contains(api.get("/v1/notifications/" + n, app.serverKey()).json().path("status").asString()));
        }

        List<Map<String, String>> messages = rows(file(app, export(app, "{\"type\":\"message\"}"), ExportType.MESSAGE));
        assertThat(messages).extracting(r -> r.get("notification_id")).containsExactlyInAnyOrder(first, second);
        for (Map<String, String> m : messages) {
            JsonNode read = api.get("/v1/notifications/" + m.get("notification_id"), app.serverKey()).json();
            assertThat(m.get("priority")).isEqualTo(read.path("priority").asString());
            assertThat(m.get("recipient_count")).isEqualTo("2");
            assertThat(Instant.parse(m.get("created_at"))).isEqualTo(Instant.parse(read.path("created_at").asString()));
        }

        String recipientsId = export(app, "{\"type\":\"recipient\",\"notification_id\":\"" + first + "\"}");
        List<CSVRecord> records = file(app, recipientsId, ExportType.RECIPIENT);
        List<Map<String, String>> recipients = rows(records);
        assertThat(recipients).extracting(r -> r.get("device_id")).containsExactlyInAnyOrder(a.id().toString(), b.id().toString());
        assertThat(recipients).allSatisfy(r -> assertThat(r.get("notification_id")).isEqualTo(first));
        assertThat(recipients).filteredOn(r -> r.get("device_id").equals(a.id().toString()))
                .singleElement().satisfies(r -> assertThat(r.get("external_user_id")).isEqualTo("ada"));
        Set<String> apiStatuses = new HashSet<>();
        api.get("/v1/notifications/" + first + "/recipients?limit=100", app.serverKey()).json().path("data")
                .forEach(r -> apiStatuses.add(r.path("device_id").asString() + "=" + r.path("status").asString()));
        assertThat(recipients.stream().map(r -> r.get("device_id") + "=" + r.get("status")).collect(Collectors.toSet()))
                .isEqualTo(apiStatuses);
        String body = download(app, recipientsId).body();
        assertThat(body).doesNotContain(a.token()).doesNotContain(b.token());

        // without a notification: both notifications' recipients
        assertThat(rows(file(app, export(app, "{\"type\":\"recipient\"}"), ExportType.RECIPIENT))).hasSize(4);
    }

    @Test
    void aRecipientHandedToALaneAndNotRecordedYetIsExportedAndListedSending() throws IOException {
        TestApp app = newApp();
        Device a = register(app, "ios", "");
        String id = notification(app);
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> Set.of("completed", "failed", "cancelled")
                .contains(api.get("/v1/notifications/" + id, app.serverKey()).json().path("status").asString()));
        // a device listed by a handover (a fan-out page gave it straight to a lane) has no recipient row
        // until its outcome is recorded; the row is written here as such a page writes it
        Device handed = register(app, "android", ",\"external_user_id\":\"hal\"");
        jdbc.sql("""
                        insert into notification_handovers (notification_id, app_id, lease_until, created_at, handed, list_key,
                                                            device_ids, platforms, user_ids, external_user_ids)
                        values (cast(:n as uuid), :app, now() + interval '1 minute', now(), 1, cast(:d as uuid),
                                array[cast(:d as uuid)], array['android'], array[cast(null as uuid)], array['hal'])""")
                .param("n", id).param("app", app.appId()).param("d", handed.id()).update();
        try {
            List<Map<String, String>> exported = rows(file(app,
                    export(app, "{\"type\":\"recipient\",\"notification_id\":\"" + id + "\"}"), ExportType.RECIPIENT));
            assertThat(exported).extracting(r -> r.get("device_id"))
                    .containsExactlyInAnyOrder(a.id().toString(), handed.id().toString());
            assertThat(exported).filteredOn(r -> r.get("device_id").equals(handed.id().toString())).singleElement()
                    .satisfies(r -> {
                        assertThat(r.get("status")).isEqualTo("sending");
                        assertThat(r.get("external_user_id")).isEqualTo("hal");
                        assertThat(r.get("platform")).isEqualTo("android");
                    });
            JsonNode listed = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey()).json().path("data");
            Set<String> apiStatuses = new HashSet<>();
            listed.forEach(r -> apiStatuses.add(r.path("device_id").asString() + "=" + r.path("status").asString()));
            assertThat(apiStatuses).hasSize(2).isEqualTo(
                    exported.stream().map(r -> r.get("device_id") + "=" + r.get("status")).collect(Collectors.toSet()));
        } finally {
            jdbc.sql("delete from notification_handovers where notification_id = cast(:n as uuid)").param("n", id).update();
        }
    }

    @Test
    void eventExportHoldsTheAppsEventsInTheTimeRange() throws IOException {
        TestApp app = newApp();
        Device d = register(app, "ios", "");
        Instant recent = Instant.now().minus(Duration.ofMinutes(10)).truncatedTo(ChronoUnit.SECONDS);
        Instant old = Instant.now().minus(Duration.ofDays(3)).truncatedTo(ChronoUnit.SECONDS);
        for (Instant at : List.of(recent, old)) {
            TestApi.Response r = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"custom\",\"event_name\":\"level_up\","
                    + "\"device_id\":\"" + d.id() + "\",\"occurred_at\":\"" + at + "\",\"metadata\":{\"level\":3}}");
            assertThat(r.status()).as(r.toString()).isEqualTo(202);
        }
        await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> jdbc.sql(
                "select count(*) from events where app_id = :app").param("app", app.appId()).query(Long.class).single() == 2);

        List<Map<String, String>> all = rows(file(app, export(app, "{\"type\":\"event\"}"), ExportType.EVENT));
        assertThat(all).extracting(r -> r.get("occurred_at")).containsExactly(old.toString(), recent.toString());

        String ranged = export(app, "{\"type\":\"event\",\"from\":\"" + recent.minusSeconds(60) + "\",\"to\":\""
                + recent.plusSeconds(60) + "\"}");
        List<Map<String, String>> rows = rows(file(app, ranged, ExportType.EVENT));
        assertThat(rows).singleElement().satisfies(r -> {
            assertThat(r.get("event_type")).isEqualTo("custom");
            assertThat(r.get("event_name")).isEqualTo("level_up");
            assertThat(r.get("device_id")).isEqualTo(d.id().toString());
            assertThat(r.get("metadata")).isEqualTo("{\"level\": 3}");
            assertThat(r.get("notification_id")).isEmpty();
        });
        assertThat(download(app, ranged).body()).doesNotContain(d.token());

        // the widest range a request may name (years 0001 to 9999) is accepted and selects everything
        String widest = export(app, "{\"type\":\"event\",\"from\":\"0001-01-01T00:00:00Z\",\"to\":\"9999-12-31T23:59:59.999999Z\"}");
        assertThat(rows(file(app, widest, ExportType.EVENT))).hasSize(2);
    }

    @Test
    void auditExportListsEveryChangeWithItsKeyAndRequestId() throws IOException {
        TestApp app = newApp();
        UUID serverKeyId = jdbc.sql("select id from api_keys where app_id = :app and kind = 'server' and name = 'server'")
                .param("app", app.appId()).query(UUID.class).single();
        String requestId = UUID.randomUUID().toString();
        TestApi.Response created = api.send(api.request("/v1/segments", app.serverKey()).header("X-Request-ID", requestId)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(
                        "{\"name\":\"s\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}}")));
        assertThat(created.status()).as(created.toString()).isEqualTo(201);
        String segment = created.json().path("segment_id").asString();
        assertThat(api.patch("/v1/segments/" + segment, app.serverKey(), "{\"name\":\"t\",\"description\":\"d\"}").status()).isEqualTo(200);
        assertThat(api.delete("/v1/segments/" + segment, app.serverKey()).status()).isEqualTo(200);

        TestApi.Response t = api.post("/v1/templates", app.serverKey(), "{\"name\":\"welcome\",\"status\":\"published\","
                + "\"content\":{\"title\":\"Hi\",\"body\":\"there\"}}");
        assertThat(t.status()).as(t.toString()).isEqualTo(201);
        String template = t.json().path("template_id").asString();
        assertThat(api.patch("/v1/templates/" + template, app.serverKey(), "{\"name\":\"hello\"}").status()).isEqualTo(200);
        assertThat(api.delete("/v1/templates/" + template, app.serverKey()).status()).isEqualTo(200);

        register(app, "ios", ",\"external_user_id\":\"bob\"");
        String notification = notification(app);
        TestApi.Response cancelled = api.post("/v1/notifications/" + notification + "/cancel", app.serverKey(), "");
        assertThat(cancelled.status()).as(cancelled.toString()).isIn(200, 422); // it may already have completed
        boolean wasCancelled = cancelled.status() == 200;

        assertThat(api.patch("/v1/app/settings", app.serverKey(), "{\"name\":\"renamed\",\"timezone\":\"Europe/Berlin\"}").status())
                .isEqualTo(200);
        assertThat(api.patch("/v1/users/bob", app.serverKey(), "{\"tags\":{\"plan\":\"gold\"}}").status()).isEqualTo(200);
        assertThat(api.delete("/v1/users/bob", app.serverKey()).status()).isIn(200, 204);

        List<Map<String, String>> rows = rows(file(app, export(app, "{\"type\":\"audit\"}"), ExportType.AUDIT));
        List<String> actions = rows.stream().map(r -> r.get("action") + " " + r.get("target_type") + " " + r.get("changed_fields")).toList();
        List<String> expected = new ArrayList<>(List.of(
                "key.create api_key kind;name;scopes",
                "key.create api_key kind;name;scopes",
                "segment.create segment filter;name",
                "segment.update segment description;name",
                "segment.archive segment status",
                "template.create template content;name;status",
                "template.update template name",
                "template.archive template status",
                "notification.create notification audience;content;priority;status"));
        if (wasCancelled) expected.add("notification.cancel notification status");
        expected.addAll(List.of(
                "settings.update app name;timezone",
                "user.update user tags",
                "user.delete user ",
                "export.create export type"));
        assertThat(actions).containsExactlyElementsOf(expected);

        // keys made in-process outside a request (the test's own set-up) are "system"
        assertThat(rows.subList(0, 2)).allSatisfy(r -> assertThat(r.get("actor")).isEqualTo("system"));
        assertThat(rows.subList(2, rows.size())).allSatisfy(r -> {
            assertThat(r.get("actor")).isEqualTo("api_key");
            assertThat(r.get("key_id")).isEqualTo(serverKeyId.toString());
            assertThat(r.get("key_kind")).isEqualTo("server");
            assertThat(r.get("request_id")).matches("[0-9a-f-]{36}");
        });
        assertThat(rows.get(2).get("request_id")).isEqualTo(requestId);
        assertThat(rows.get(2).get("target_id")).isEqualTo(segment);
        assertThat(rows).filteredOn(r -> r.get("action").equals("user.delete")).singleElement()
                .satisfies(r -> assertThat(r.get("target_id")).isEqualTo("bob"));
    }

    @Test
    void credentialChangesAreAuditedByFieldNameNeverByValue() throws IOException {
        TestApp app = newApp();
        var account = dev.pushservice.delivery.fcm.LocalServiceAccount.generate("audit-proj");
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(),
                "{\"fcm\":{\"service_account\":" + account.json(URI.create("https://oauth2.googleapis.com/token")) + "}}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        String id = export(app, "{\"type\":\"audit\"}");
        List<Map<String, String>> rows = rows(file(app, id, ExportType.AUDIT));
        assertThat(rows).filteredOn(row -> row.get("action").equals("credentials.update")).singleElement()
                .satisfies(row -> assertThat(row.get("changed_fields")).isEqualTo("fcm.service_account"));
        assertThat(download(app, id).body()).doesNotContain("PRIVATE KEY").doesNotContain("private_key");
    }

    @Test
    void theAuditLogRefusesUpdatesAndDeletes() {
        TestApp app = newApp();
        assertThatThrownBy(() -> jdbc.sql("update audit_log set action = 'x' where app_id = :app").param("app", app.appId()).update())
                .hasMessageContaining("append-only");
        assertThatThrownBy(() -> jdbc.sql("delete from audit_log where app_id = :app").param("app", app.appId()).update())
                .hasMessageContaining("append-only");
    }

    // --- files ---------------------------------------------------------------------------------

    @Test
    void gzipIsSentWhenTheClientAcceptsIt() throws Exception {
        TestApp app = newApp();
        for (int i = 0; i < 5; i++) register(app, "android", "");
        String id = export(app, "{\"type\":\"audience\"}");
        completed(app, id);
        String plain = download(app, id).body();

        HttpResponse<byte[]> gz = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create(api.base() + "/v1/exports/" + id + "/download"))
                .header("Authorization", "Bearer " + app.serverKey()).header("Accept-Encoding", "gzip, deflate").GET().build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(gz.statusCode()).isEqualTo(200);
        assertThat(gz.headers().firstValue("Content-Encoding")).hasValue("gzip");
        assertThat(gz.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/csv");
        assertThat(gz.headers().firstValue("X-Request-ID")).isPresent();
        assertThat(gz.headers().firstValueAsLong("Content-Length").orElseThrow()).isEqualTo(gz.body().length);
        try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(gz.body()))) {
            assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo(plain);
        }
        assertThat(ExportController.acceptsGzip(java.util.Collections.enumeration(List.of("gzip;q=0, identity")))).isFalse();
    }

    @Test
    void aCompletedExportExpiresAfterADayAndItsFileIsDeleted() throws IOException {
        TestApp app = newApp();
        register(app, "ios", "");
        String id = export(app, "{\"type\":\"audience\"}");
        file(app, id, ExportType.AUDIENCE);

        clock.advance(Duration.ofHours(23).plusMinutes(59));
        assertThat(download(app, id).status()).isEqualTo(200);
        clock.advance(Duration.ofMinutes(2));
        assertThat(listed(app, id).path("status").asString()).isEqualTo("expired");
        TestApi.Response gone = download(app, id);
        assertError(gone, 409, "conflict");
        assertThat(gone.json().path("error").path("message").asString()).contains("expired");

        writer.cleanUp();
        assertThat(jdbc.sql("select count(*) from export_chunks where export_id = :id").param("id", UUID.fromString(id))
                .query(Long.class).single()).isZero();
        assertThat(jdbc.sql("select status from exports where id = :id").param("id", UUID.fromString(id))
                .query(String.class).single()).isEqualTo("expired");
        clock.reset();
        assertThat(listed(app, id).path("status").asString()).isEqualTo("expired");
        assertError(download(app, id), 409, "conflict");
    }

    @Test
    void anExportThatIsNotReadyOrFailedSaysSoOnDownload() {
        TestApp app = newApp();
        UUID pending = UUID.randomUUID();
        UUID failed = UUID.randomUUID();
        jdbc.sql("""
                insert into exports (id, app_id, type, filters, status, created_at, failure_reason)
                values (:p, :app, 'audience', '{}', 'running', now(), null),
                       (:f, :app, 'audience', '{}', 'failed', now(), 'the export could not be written')""")
                .param("p", pending).param("f", failed).param("app", app.appId()).update();
        TestApi.Response notReady = download(app, pending.toString());
        assertError(notReady, 409, "conflict");
        assertThat(notReady.json().path("error").path("message").asString()).contains("not ready", "running");
        TestApi.Response failure = download(app, failed.toString());
        assertError(failure, 409, "conflict");
        assertThat(failure.json().path("error").path("message").asString()).contains("failed", "the export could not be written");
        assertThat(listed(app, failed.toString()).path("error").asString()).isEqualTo("the export could not be written");
    }

    // --- crashes -------------------------------------------------------------------------------

    @Test
    void anInterruptedRunStartsAgainAndRepeatedInterruptionsFailTheExport() throws IOException {
        TestApp app = newApp();
        register(app, "ios", "");
        register(app, "android", "");
        UUID interrupted = UUID.randomUUID();
        UUID hopeless = UUID.randomUUID();
        // as a crashed instance leaves them: running, with part of a file
        jdbc.sql("""
                insert into exports (id, app_id, type, filters, status, attempts, row_count, created_at, started_at)
                values (:i, :app, 'audience', '{}', 'running', 1, 1, now(), now()),
                       (:h, :app, 'audience', '{}', 'running', 3, 1, now(), now())""")
                .param("i", interrupted).param("h", hopeless).param("app", app.appId()).update();
        jdbc.sql("insert into export_chunks (export_id, seq, data) values (:i, 0, '\\x1f8b'::bytea)").param("i", interrupted).update();

        // what db-scheduler's dead-execution detection does: run the task again
        writer.run(new ExportWriter.Data(app.appId(), interrupted));
        writer.run(new ExportWriter.Data(app.appId(), hopeless));

        List<CSVRecord> records = file(app, interrupted.toString(), ExportType.AUDIENCE);
        assertThat(records).hasSize(3);
        assertThat(jdbc.sql("select attempts from exports where id = :i").param("i", interrupted).query(Integer.class).single()).isEqualTo(2);
        JsonNode failed = listed(app, hopeless.toString());
        assertThat(failed.path("status").asString()).isEqualTo("failed");
        assertThat(failed.path("error").asString()).contains("interrupted 3 times");
    }

    @Test
    void anExportWhoseTaskIsGoneIsFailedByTheCleanUp() {
        TestApp app = newApp();
        UUID orphan = UUID.randomUUID();
        jdbc.sql("insert into exports (id, app_id, type, filters, status, attempts, created_at) values (:o, :app, 'event', '{}', 'running', 1, now())")
                .param("o", orphan).param("app", app.appId()).update();
        writer.cleanUp();
        JsonNode failed = listed(app, orphan.toString());
        assertThat(failed.path("status").asString()).isEqualTo("failed");
        assertThat(failed.path("error").asString()).contains("stopped without finishing");
    }

    // --- tenancy and bad input -----------------------------------------------------------------

    @Test
    void anotherAppsExportIsNotFoundAndNeverListed() {
        TestApp app = newApp();
        TestApp other = newApp();
        String id = export(other, "{\"type\":\"message\"}");
        assertError(download(app, id), 404, "not_found");
        assertError(download(app, UUID.randomUUID().toString()), 404, "not_found");
        assertThat(api.get("/v1/exports", app.serverKey()).json().path("data")).isEmpty();
        assertError(api.get("/v1/exports/not-a-uuid/download", app.serverKey()), 422, "validation_failed");
    }

    @Test
    void badRequestsAre422sAndQueueNothing() {
        TestApp app = newApp();
        TestApp other = newApp();
        String foreignNotification = notification(other);
        TestApi.Response foreignSegment = api.post("/v1/segments", other.serverKey(),
                "{\"name\":\"s\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}}");
        String segment = foreignSegment.json().path("segment_id").asString();
        Map<String, String> cases = new java.util.LinkedHashMap<>();
        cases.put("{}", "type");
        cases.put("{\"type\":\"devices\"}", "type");
        cases.put("{\"type\":7}", "type");
        cases.put("{\"type\":\"event\",\"from\":\"yesterday\"}", "from");
        cases.put("{\"type\":\"event\",\"to\":\"2025-01-01T00:00:00\"}", "to");
        cases.put("{\"type\":\"event\",\"from\":\"2025-02-01T00:00:00Z\",\"to\":\"2025-01-01T00:00:00Z\"}", "to");
        // years java.time parses but timestamptz cannot hold (the export used to end failed)
        cases.put("{\"type\":\"event\",\"from\":\"+999999999-01-01T00:00:00Z\"}", "from");
        cases.put("{\"type\":\"event\",\"to\":\"+999999999-01-01T00:00:00Z\"}", "to");
        cases.put("{\"type\":\"audit\",\"from\":\"-999999999-01-01T00:00:00Z\"}", "from");
        cases.put("{\"type\":\"message\",\"to\":\"+10000-01-01T00:00:00Z\"}", "to");
        cases.put("{\"type\":\"recipient\",\"from\":\"0000-12-31T23:59:59Z\"}", "from");
        cases.put("{\"type\":\"recipient\",\"notification_id\":\"nope\"}", "notification_id");
        cases.put("{\"type\":\"recipient\",\"notification_id\":\"" + foreignNotification + "\"}", "notification_id");
        cases.put("{\"type\":\"message\",\"notification_id\":\"" + UUID.randomUUID() + "\"}", "notification_id");
        cases.put("{\"type\":\"audience\",\"segment_id\":\"" + segment + "\"}", "segment_id");
        cases.put("{\"type\":\"event\",\"segment_id\":\"" + UUID.randomUUID() + "\"}", "segment_id");
        cases.forEach((body, field) -> {
            TestApi.Response r = api.post("/v1/exports", app.serverKey(), body);
            assertError(r, 422, "validation_failed");
            List<String> fields = new ArrayList<>();
            r.json().path("error").path("details").forEach(d -> fields.add(d.path("field").asString()));
            assertThat(fields).as(body).containsExactly(field);
        });
        assertThat(exportsOf(app)).isZero();
        assertThat(jdbc.sql("select count(*) from audit_log where app_id = :app").param("app", app.appId())
                .query(Long.class).single()).isEqualTo(2); // the two keys of the set-up, nothing else
        assertError(api.post("/v1/exports", app.publicKey(), "{\"type\":\"audience\"}"), 403, "forbidden");
    }

    @Test
    void theListShowsTheHundredNewest() {
        TestApp app = newApp();
        jdbc.sql("""
                insert into exports (id, app_id, type, filters, status, created_at)
                select gen_random_uuid(), :app, 'audit', '{}', 'failed', now() - make_interval(mins => g)
                from generate_series(1, 105) g""").param("app", app.appId()).update();
        String newest = export(app, "{\"type\":\"audit\"}");
        JsonNode data = api.get("/v1/exports?limit=200", app.serverKey()).json().path("data");
        assertThat(data).hasSize(100);
        JsonNode second = api.get("/v1/exports?limit=60&page=2", app.serverKey()).json();
        assertThat(second.path("data")).hasSize(40);
        assertThat(second.path("pagination").path("has_more").asBoolean()).isFalse();
        assertThat(api.get("/v1/exports?limit=50&page=3", app.serverKey()).json().path("data")).isEmpty();
        assertThat(data.get(0).path("export_id").asString()).isEqualTo(newest);
        List<Instant> created = new ArrayList<>();
        data.forEach(e -> created.add(Instant.parse(e.path("created_at").asString())));
        assertThat(created).isSortedAccordingTo(java.util.Comparator.reverseOrder());
    }
}
