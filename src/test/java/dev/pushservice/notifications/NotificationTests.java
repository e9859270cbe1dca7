package dev.pushservice.notifications;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.delivery.DeliveryEngine;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;

/**
 * Notifications through the API: creation with every target type and segments, templates,
 * scheduling on the test clock, cancel in each state, idempotent replay under concurrency, reads,
 * and what fan-out materializes (asserted through the recipients read). Delivery is paused here so
 * recipients stay as the fan-out made them; {@link DeliveryTests} covers what delivery does.
 */
class NotificationTests extends ApiTest {

    private static final Duration FANOUT_WAIT = Duration.ofSeconds(30);

    @Autowired
    TestClock clock;
    @Autowired
    JdbcClient jdbc;
    @Autowired
    NotificationFanOut fanOut;
    @Autowired
    javax.sql.DataSource dataSource;

    @Autowired
    DeliveryEngine delivery;

    @BeforeEach
    void holdDelivery() {
        delivery.pause();
    }

    @AfterEach
    void resetClock() {
        clock.reset();
        delivery.resume();
    }

    // --- helpers -------------------------------------------------------------------------------

    private TestApi.Response send(TestApp app, String key, String body) {
        HttpRequest.Builder b = api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        if (key != null) b.header("Idempotency-Key", key);
        return api.send(b);
    }

    private String create(TestApp app, String body) {
        TestApi.Response r = send(app, UUID.randomUUID().toString(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("idempotent_replay").asBoolean()).isFalse();
        return r.json().path("notification_id").asString();
    }

    private static String content(String target) {
        return "{\"title\":\"Hello\",\"body\":\"World\",\"target\":" + target + "}";
    }

    private UUID ios(TestApp app, String extra) {
        return register(app, "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"" + extra + "}");
    }

    private UUID android(TestApp app, String extra) {
        return register(app, "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"" + extra + "}");
    }

    private UUID register(TestApp app, String body) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(), body);
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return UUID.fromString(r.json().path("device_id").asString());
    }

    private String segment(TestApp app, String filter) {
        TestApi.Response r = api.post("/v1/segments", app.serverKey(), "{\"name\":\"s\",\"filter\":" + filter + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("segment_id").asString();
    }

    private JsonNode summary(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id, app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    /** Waits until the fan-out has materialized every recipient. */
    private JsonNode materialized(TestApp app, String id) {
        await().atMost(FANOUT_WAIT).pollInterval(Duration.ofMillis(100))
                .until(() -> !summary(app, id).path("recipient_count").isNull());
        return summary(app, id);
    }

    private List<JsonNode> recipients(TestApp app, String id) {
        List<JsonNode> all = new ArrayList<>();
        for (int page = 1; ; page++) {
            TestApi.Response r = api.get("/v1/notifications/" + id + "/recipients?limit=200&page=" + page, app.serverKey());
            assertThat(r.status()).as(r.toString()).isEqualTo(200);
            r.json().path("data").forEach(all::add);
            if (!r.json().path("pagination").path("has_more").asBoolean()) return all;
        }
    }

    private Set<UUID> recipientDevices(TestApp app, String id) {
        return recipients(app, id).stream().map(r -> UUID.fromString(r.path("device_id").asString())).collect(Collectors.toSet());
    }

    private long notificationsOf(TestApp app) {
        return jdbc.sql("select count(*) from notifications where app_id = :app").param("app", app.appId())
                .query(Long.class).single();
    }

    private List<String> facts(String id) {
        return jdbc.sql("select kind from lifecycle_events where subject_id = :id order by id")
                .param("id", UUID.fromString(id)).query(String.class).list();
    }

    // --- creation and fan-out ----------------------------------------------------------------

    @Test
    void immediateNotificationIsQueuedThenMaterializesEveryActiveDeviceOfTheApp() {
        TestApp app = newApp();
        UUID a = ios(app, ",\"external_user_id\":\"ann\"");
        UUID b = android(app, "");
        UUID gone = android(app, "");
        assertThat(api.delete("/v1/devices/" + gone, app.publicKey()).status()).isEqualTo(200);
        ios(newApp(), ""); // another app's device is never a recipient

        TestApi.Response r = send(app, "k-1", "{\"title\":\"Hello\",\"body\":\"World\",\"target\":{\"type\":\"all\"},"
                + "\"interruption_level\":null,\"name\":\"launch\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        JsonNode created = r.json();
        assertThat(created.path("status").asString()).isEqualTo("queued");
        assertThat(created.path("interruption_level").asString()).isEqualTo("active");
        assertThat(created.path("idempotent_replay").asBoolean()).isFalse();
        String id = created.path("notification_id").asString();

        JsonNode summary = materialized(app, id);
        assertThat(summary.path("status").asString()).isEqualTo("processing");
        assertThat(summary.path("recipient_count").asInt()).isEqualTo(2);
        assertThat(summary.path("counts").path("pending").asInt()).isEqualTo(2);
        assertThat(summary.path("platforms").path("ios").path("recipients").asInt()).isEqualTo(1);
        assertThat(summary.path("platforms").path("android").path("recipients").asInt()).isEqualTo(1);
        assertThat(summary.path("accepted_count").asInt()).isZero();
        assertThat(summary.path("name").asString()).isEqualTo("launch");
        assertThat(summary.path("content").path("title").asString()).isEqualTo("Hello");
        assertThat(summary.path("queued_at").isNull()).isFalse();
        assertThat(summary.path("processing_at").isNull()).isFalse();

        List<JsonNode> rows = recipients(app, id);
        assertThat(rows).extracting(n -> UUID.fromString(n.path("device_id").asString())).containsExactlyInAnyOrder(a, b);
        JsonNode ann = rows.stream().filter(n -> n.path("device_id").asString().equals(a.toString())).findFirst().orElseThrow();
        assertThat(ann.path("external_user_id").asString()).isEqualTo("ann");
        assertThat(ann.path("status").asString()).isEqualTo("pending");
        assertThat(ann.path("attempts").asInt()).isZero();
        assertThat(ann.path("last_error").isNull()).isTrue();
        assertThat(rows.toString()).doesNotContain("push_token").doesNotContain("token");

        assertThat(facts(id)).containsExactly("notification.created", "notification.queued", "notification.processing");
    }

    @Test
    void eachTargetTypeSelectsItsDevices() {
        TestApp app = newApp();
        UUID annIos = ios(app, ",\"external_user_id\":\"ann\",\"tags\":{\"plan\":\"gold\",\"level\":7}");
        UUID annAndroid = android(app, ",\"external_user_id\":\"ann\"");
        UUID bob = ios(app, ",\"external_user_id\":\"bob\",\"tags\":{\"plan\":\"free\"}");
        UUID anon = android(app, ",\"tags\":{\"plan\":\"gold\"}");
        String androids = segment(app, "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}");

        assertThat(recipientDevices(app, id(materialized(app, create(app, content("{\"type\":\"all\"}"))))))
                .containsExactlyInAnyOrder(annIos, annAndroid, bob, anon);
        assertThat(recipientDevices(app, id(materialized(app, create(app, content("{\"type\":\"device\",\"device_id\":\"" + bob + "\"}"))))))
                .containsExactly(bob);
        assertThat(recipientDevices(app, id(materialized(app, create(app, content("{\"type\":\"user\",\"external_user_id\":\"ann\"}"))))))
                .containsExactlyInAnyOrder(annIos, annAndroid);
        assertThat(recipientDevices(app, id(materialized(app, create(app, content("{\"type\":\"tag\",\"key\":\"plan\",\"value\":\"gold\"}"))))))
                .containsExactlyInAnyOrder(annIos, annAndroid, anon);
        assertThat(recipientDevices(app, id(materialized(app, create(app, content("{\"type\":\"tag\",\"key\":\"level\",\"value\":7}"))))))
                .containsExactlyInAnyOrder(annIos, annAndroid);
        String bySegment = create(app, content("{\"type\":\"segment\",\"segment_id\":\"" + androids + "\"}"));
        assertThat(recipientDevices(app, id(materialized(app, bySegment)))).containsExactlyInAnyOrder(annAndroid, anon);
        JsonNode summary = summary(app, bySegment);
        assertThat(summary.path("target_segment").path("segment_id").asString()).isEqualTo(androids);
        assertThat(summary.path("target_segment").path("version").asInt()).isEqualTo(1);
    }

    private static String id(JsonNode summary) {
        return summary.path("notification_id").asString();
    }

    @Test
    void includedSegmentsNarrowTheTargetAndExcludedSegmentsRemoveFromIt() {
        TestApp app = newApp();
        UUID goldIos = ios(app, ",\"tags\":{\"plan\":\"gold\"}");
        UUID goldAndroid = android(app, ",\"tags\":{\"plan\":\"gold\"}");
        UUID silverIos = ios(app, ",\"tags\":{\"plan\":\"silver\"}");
        UUID freeAndroid = android(app, ",\"tags\":{\"plan\":\"free\"}");
        String gold = segment(app, "{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}");
        String silver = segment(app, "{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"silver\"}");
        String android = segment(app, "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}");

        String included = create(app, "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},"
                + "\"included_segment_ids\":[\"" + gold + "\",\"" + silver + "\"]}");
        assertThat(recipientDevices(app, id(materialized(app, included)))).containsExactlyInAnyOrder(goldIos, goldAndroid, silverIos);

        String both = create(app, "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},"
                + "\"included_segment_ids\":[\"" + gold + "\",\"" + silver + "\"],\"excluded_segment_ids\":[\"" + android + "\"]}");
        assertThat(recipientDevices(app, id(materialized(app, both)))).containsExactlyInAnyOrder(goldIos, silverIos);

        String excludedOnly = create(app, "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},"
                + "\"excluded_segment_ids\":[\"" + gold + "\",\"" + silver + "\"]}");
        assertThat(recipientDevices(app, id(materialized(app, excludedOnly)))).containsExactly(freeAndroid);

        JsonNode summary = summary(app, both);
        assertThat(summary.path("included_segments")).hasSize(2);
        assertThat(summary.path("excluded_segments").get(0).path("segment_id").asString()).isEqualTo(android);
        assertThat(summary.path("excluded_segments").get(0).path("version").asInt()).isEqualTo(1);
    }

    @Test
    void templateContentIsSnapshottedWithRequestFieldsOverridingIt() {
        TestApp app = newApp();
        ios(app, ",\"external_user_id\":\"ann\"");
        TestApi.Response t = api.post("/v1/templates", app.serverKey(), "{\"name\":\"welcome\",\"status\":\"published\","
                + "\"content\":{\"title\":\"Hi {{ template.name }}\",\"body\":\"Welcome {{ external_user_id }}\","
                + "\"click_url\":\"app://home\",\"interruption_level\":\"time_sensitive\"}}");
        assertThat(t.status()).as(t.toString()).isEqualTo(201);
        String template = t.json().path("template_id").asString();

        TestApi.Response r = send(app, "tmpl", "{\"template_id\":\"" + template + "\",\"template_data\":{\"name\":\"Ann\"},"
                + "\"body\":\"Overridden for {{ external_user_id }}\",\"target\":{\"type\":\"all\"}}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("interruption_level").asString()).isEqualTo("time_sensitive");
        String id = r.json().path("notification_id").asString();

        // a later edit of the template does not change the notification
        assertThat(api.patch("/v1/templates/" + template, app.serverKey(),
                "{\"content\":{\"title\":\"Changed\",\"body\":\"Changed\"}}").status()).isEqualTo(200);
        JsonNode summary = materialized(app, id);
        assertThat(summary.path("template").path("template_id").asString()).isEqualTo(template);
        assertThat(summary.path("template").path("version").asInt()).isEqualTo(1);
        JsonNode content = summary.path("content");
        assertThat(content.path("title").asString()).isEqualTo("Hi {{ template.name }}");
        assertThat(content.path("body").asString()).isEqualTo("Overridden for {{ external_user_id }}");
        assertThat(content.path("click_url").asString()).isEqualTo("app://home");
        assertThat(content.path("template_data").path("name").asString()).isEqualTo("Ann");
        assertThat(summary.path("interruption_level").asString()).isEqualTo("time_sensitive");

        // archived: refused, nothing created
        assertThat(api.delete("/v1/templates/" + template, app.serverKey()).status()).isEqualTo(200);
        long before = notificationsOf(app);
        TestApi.Response archived = send(app, "archived", "{\"template_id\":\"" + template + "\",\"target\":{\"type\":\"all\"}}");
        assertError(archived, 422, "validation_failed");
        assertThat(archived.json().path("error").path("details").toString()).contains("template_id");
        assertThat(notificationsOf(app)).isEqualTo(before);
    }

    @Test
    void userPlaceholdersFreezeTheRecipientsTagsAtMaterialization() {
        TestApp app = newApp();
        ios(app, ",\"external_user_id\":\"ann\",\"tags\":{\"plan\":\"gold\"}");
        String id = create(app, content("{\"type\":\"all\"}").replace("\"Hello\"", "\"Your plan: {{ tags.plan }}\""));
        materialized(app, id);
        assertThat(api.patch("/v1/users/ann", app.serverKey(), "{\"tags\":{\"plan\":\"free\"}}").status()).isEqualTo(200);
        String frozen = jdbc.sql("select render_values->'tags'->>'plan' from notification_recipients where notification_id = :id")
                .param("id", UUID.fromString(id)).query(String.class).single();
        assertThat(frozen).isEqualTo("gold");
    }

    @Test
    void aNotificationWithoutRecipientsCompletesAtOnce() {
        TestApp app = newApp();
        String id = create(app, content("{\"type\":\"all\"}"));
        await().atMost(FANOUT_WAIT).until(() -> summary(app, id).path("status").asString().equals("completed"));
        JsonNode summary = summary(app, id);
        assertThat(summary.path("recipient_count").asInt()).isZero();
        assertThat(summary.path("finished_at").isNull()).isFalse();
        assertThat(facts(id)).containsExactly("notification.created", "notification.queued",
                "notification.processing", "notification.completed");
        assertError(api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), ""), 422, "validation_failed");
    }

    // --- scheduling ----------------------------------------------------------------------------

    @Test
    void scheduledNotificationStaysDraftUntilDueAndResolvesItsFrozenAudienceThen() {
        TestApp app = newApp();
        UUID gold = ios(app, ",\"tags\":{\"plan\":\"gold\"}");
        android(app, ",\"tags\":{\"plan\":\"free\"}");
        String segment = segment(app, "{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}");
        OffsetDateTime at = OffsetDateTime.ofInstant(clock.instant().plus(Duration.ofHours(2)), ZoneOffset.ofHours(2))
                .truncatedTo(ChronoUnit.SECONDS);
        TestApi.Response r = send(app, "sched", "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"segment\",\"segment_id\":\""
                + segment + "\"},\"scheduled_at\":\"" + at + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("status").asString()).isEqualTo("draft");
        assertThat(Instant.parse(r.json().path("scheduled_at").asString())).isEqualTo(at.toInstant());
        assertThat(r.json().path("scheduled_at").asString()).endsWith("Z");
        String id = r.json().path("notification_id").asString();

        // edits after creation: the segment's new version is not used; a device registered before it is due is
        UUID later = ios(app, ",\"tags\":{\"plan\":\"gold\"}");
        assertThat(api.patch("/v1/segments/" + segment, app.serverKey(),
                "{\"filter\":{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}}").status()).isEqualTo(200);

        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5))
                .until(() -> summary(app, id).path("status").asString().equals("draft"));
        assertThat(recipients(app, id)).isEmpty();

        clock.advance(Duration.ofHours(2).plusMinutes(1));
        JsonNode summary = materialized(app, id);
        assertThat(summary.path("status").asString()).isEqualTo("processing");
        assertThat(recipientDevices(app, id)).containsExactlyInAnyOrder(gold, later);
        assertThat(facts(id)).containsExactly("notification.created", "notification.queued", "notification.processing");
    }

    @Test
    void pastScheduledAtSendsImmediately() {
        TestApp app = newApp();
        TestApi.Response r = send(app, "past", "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},\"scheduled_at\":\"2020-01-01T00:00:00+01:00\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("status").asString()).isEqualTo("queued");
        assertThat(r.json().path("scheduled_at").asString()).isEqualTo("2019-12-31T23:00:00Z");
    }

    // --- cancel --------------------------------------------------------------------------------

    @Test
    void cancellingADraftStopsItForGood() {
        TestApp app = newApp();
        ios(app, "");
        String at = clock.instant().plus(Duration.ofHours(1)).toString();
        TestApi.Response r = send(app, "draft", "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},\"scheduled_at\":\"" + at + "\"}");
        String id = r.json().path("notification_id").asString();
        TestApi.Response cancelled = api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), "");
        assertThat(cancelled.status()).as(cancelled.toString()).isEqualTo(200);
        assertThat(cancelled.json().path("status").asString()).isEqualTo("cancelled");
        assertThat(cancelled.json().path("finished_at").isNull()).isFalse();

        clock.advance(Duration.ofHours(1).plusMinutes(1));
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(6))
                .until(() -> summary(app, id).path("status").asString().equals("cancelled"));
        assertThat(recipients(app, id)).isEmpty();
        assertThat(facts(id)).containsExactly("notification.created", "notification.cancelled");
        assertError(api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), ""), 422, "validation_failed");
    }

    @Test
    void cancellingAQueuedNotificationLeavesNoPendingRecipients() {
        TestApp app = newApp();
        for (int i = 0; i < 3; i++) ios(app, "");
        String id = create(app, content("{\"type\":\"all\"}"));
        TestApi.Response cancelled = api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), "");
        assertThat(cancelled.status()).as(cancelled.toString()).isEqualTo(200);
        assertThat(cancelled.json().path("status").asString()).isEqualTo("cancelled");
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5))
                .until(() -> recipients(app, id).stream().allMatch(n -> n.path("status").asString().equals("cancelled")));
        assertThat(summary(app, id).path("status").asString()).isEqualTo("cancelled");
    }

    @Test
    void cancellingAProcessingNotificationCancelsItsPendingRecipients() {
        TestApp app = newApp();
        for (int i = 0; i < 3; i++) android(app, "");
        String id = create(app, content("{\"type\":\"all\"}"));
        materialized(app, id);
        TestApi.Response cancelled = api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), "");
        assertThat(cancelled.status()).as(cancelled.toString()).isEqualTo(200);
        JsonNode s = cancelled.json();
        assertThat(s.path("status").asString()).isEqualTo("cancelled");
        // the counts of the answer's moment: what is still pending there is cancelled by the background
        assertThat(s.path("counts").path("cancelled").asInt() + s.path("counts").path("pending").asInt()).isEqualTo(3);
        assertThat(s.path("platforms").path("android").path("recipients").asInt()).isEqualTo(3);
        await().atMost(FANOUT_WAIT).until(() -> facts(id).contains("notification.cancelled"));
        assertThat(recipients(app, id)).allMatch(n -> n.path("status").asString().equals("cancelled"));
        assertThat(facts(id)).endsWith("notification.cancelled");
        JsonNode after = summary(app, id);
        assertThat(after.path("counts").path("cancelled").asInt()).isEqualTo(3);
        assertThat(after.path("counts").path("pending").asInt()).isZero();
        assertThat(jdbc.sql("select report::text from notifications where id = cast(:id as uuid)").param("id", id)
                .query(String.class).single()).as("the report page's figures, stored by the cancel (nothing in flight)")
                .contains("[\"android\", \"cancelled\", null, 3]");
        assertError(api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), ""), 422, "validation_failed");
    }

    /**
     * The cancel answers without touching the recipient rows: with one pending recipient held by
     * another transaction (as a slow writer would), the answer still comes, that recipient still
     * pending at the answer, and nothing recorded as finished; once it is let go, the background
     * cancels every pending recipient in batches and records the fact. Before issue 29 the cancel
     * updated every pending row in its request and waited for the held one.
     */
    @Test
    void theCancelAnswersBeforeItsPendingRecipientsAreCancelledAndTheBackgroundEndsThemAll() throws Exception {
        TestApp app = newApp();
        int devices = 800;
        jdbc.sql("""
                        insert into devices (id, app_id, platform, token, token_hash)
                        select gen_random_uuid(), :app, 'android', t, sha256(convert_to(t, 'UTF8'))
                        from (select 'cancel-' || gen_random_uuid() as t from generate_series(1, :n)) s""")
                .param("app", app.appId()).param("n", devices).update();
        String id = create(app, content("{\"type\":\"all\"}"));
        assertThat(materialized(app, id).path("recipient_count").asInt()).isEqualTo(devices);
        UUID held = jdbc.sql("select device_id from notification_recipients where notification_id = cast(:id as uuid) limit 1")
                .param("id", id).query(UUID.class).single();

        ExecutorService pool = Executors.newSingleThreadExecutor();
        TestApi.Response answer;
        try (java.sql.Connection writer = dataSource.getConnection()) {
            writer.setAutoCommit(false);
            try (var lock = writer.prepareStatement("select 1 from notification_recipients where notification_id = ? and device_id = ? for update")) {
                lock.setObject(1, UUID.fromString(id));
                lock.setObject(2, held);
                lock.executeQuery().close();
            }
            Future<TestApi.Response> cancel = pool.submit(() -> api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), ""));
            answer = cancel.get(20, java.util.concurrent.TimeUnit.SECONDS); // the old cancel waited for the held row here
            assertThat(answer.status()).as(answer.toString()).isEqualTo(200);
            assertThat(answer.json().path("status").asString()).isEqualTo("cancelled");
            assertThat(answer.json().path("finished_at").isNull()).isFalse();
            assertThat(recipientStatus(id, held)).as("the held recipient is still pending after the answer").isEqualTo("pending");
            assertThat(facts(id)).as("the cancel finishes when nothing is pending").doesNotContain("notification.cancelled");
            // the others are cancelled meanwhile, without waiting for the held one
            await().atMost(FANOUT_WAIT).until(() -> statusCounts(id).getOrDefault("cancelled", 0L) == devices - 1);
            assertThat(summary(app, id).path("counts").path("pending").asInt()).isEqualTo(1);
            writer.rollback();
        } finally {
            pool.shutdownNow();
        }
        await().atMost(FANOUT_WAIT).until(() -> facts(id).contains("notification.cancelled"));
        assertThat(statusCounts(id)).isEqualTo(java.util.Map.of("cancelled", (long) devices));
        assertThat(recipientStatus(id, held)).isEqualTo("cancelled");
        assertThat(jdbc.sql("select payload ->> 'recipients_cancelled' from lifecycle_events where subject_id = cast(:id as uuid)"
                        + " and kind = 'notification.cancelled'").param("id", id).query(String.class).single())
                .isEqualTo(String.valueOf(devices));
        assertThat(jdbc.sql("select summary is not null and not cancelling from notifications where id = cast(:id as uuid)")
                .param("id", id).query(Boolean.class).single()).as("final counts stored, the cancel finished").isTrue();
        assertThat(summary(app, id).path("counts").path("cancelled").asInt()).isEqualTo(devices);
        assertThat(facts(id)).endsWith("notification.cancelled").filteredOn("notification.cancelled"::equals).hasSize(1);
    }

    private String recipientStatus(String id, UUID device) {
        return jdbc.sql("select status from notification_recipients where notification_id = cast(:id as uuid) and device_id = :d")
                .param("id", id).param("d", device).query(String.class).single();
    }

    private java.util.Map<String, Long> statusCounts(String id) {
        java.util.Map<String, Long> counts = new java.util.TreeMap<>();
        jdbc.sql("select status, count(*) as n from notification_recipients where notification_id = cast(:id as uuid) group by status")
                .param("id", id).query((rs, n) -> counts.put(rs.getString("status"), rs.getLong("n"))).list();
        return counts;
    }

    /**
     * The recipient list by cursor: pages of 7 over 100 recipients see each exactly once while the
     * recipients' states change between pages (before and after the cursor); the last page has no
     * next cursor. Offset paging stops at 10,000 rows deep with a 422 that points at the cursor.
     */
    @Test
    void recipientPagesByCursorSeeEveryRecipientOnceWhileTheirStatesChange() {
        TestApp app = newApp();
        Set<UUID> devices = new HashSet<>();
        for (int i = 0; i < 100; i++) devices.add(i % 2 == 0 ? ios(app, "") : android(app, ""));
        String id = create(app, content("{\"type\":\"all\"}"));
        materialized(app, id);

        List<UUID> seen = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        java.util.Random random = new java.util.Random(29);
        while (true) {
            TestApi.Response r = api.get("/v1/notifications/" + id + "/recipients?limit=7"
                    + (cursor == null ? "" : "&cursor=" + cursor), app.serverKey());
            assertThat(r.status()).as(r.toString()).isEqualTo(200);
            r.json().path("data").forEach(n -> seen.add(UUID.fromString(n.path("device_id").asString())));
            pages++;
            JsonNode pagination = r.json().path("pagination");
            assertThat(pagination.path("page").asInt()).isEqualTo(1);
            if (!pagination.path("has_more").asBoolean()) {
                assertThat(pagination.path("next_cursor").isNull()).isTrue();
                break;
            }
            cursor = pagination.path("next_cursor").asString();
            assertThat(cursor).matches("[A-Za-z0-9_-]+");
            // rows change as the list is walked: some before the cursor, some after it
            jdbc.sql("""
                            update notification_recipients set status = :s, attempts = attempts + 1, updated_at = now()
                            where notification_id = cast(:id as uuid) and device_id in (
                                select device_id from notification_recipients where notification_id = cast(:id as uuid)
                                order by md5(device_id::text || :salt) limit 10)""")
                    .param("id", id).param("s", random.nextBoolean() ? "sending" : "failed")
                    .param("salt", String.valueOf(random.nextInt())).update();
        }
        assertThat(pages).isEqualTo(15);
        assertThat(seen).hasSize(100).doesNotHaveDuplicates();
        assertThat(new HashSet<>(seen)).isEqualTo(devices);
        assertThat(seen.stream().map(UUID::toString).toList()).as("in PostgreSQL's uuid order").isSorted();

        // a page by offset carries a cursor too, so a client can go on by cursor
        TestApi.Response first = api.get("/v1/notifications/" + id + "/recipients?limit=50&page=1", app.serverKey());
        assertThat(first.status()).as(first.toString()).isEqualTo(200);
        String next = first.json().path("pagination").path("next_cursor").asString();
        TestApi.Response second = api.get("/v1/notifications/" + id + "/recipients?limit=50&cursor=" + next, app.serverKey());
        TestApi.Response byPage = api.get("/v1/notifications/" + id + "/recipients?limit=50&page=2", app.serverKey());
        assertThat(second.json().path("data").toString()).isEqualTo(byPage.json().path("data").toString());

        // offset paging is bounded: page × limit at most 10,000
        assertThat(api.get("/v1/notifications/" + id + "/recipients?limit=200&page=50", app.serverKey()).status()).isEqualTo(200);
        TestApi.Response deep = api.get("/v1/notifications/" + id + "/recipients?limit=200&page=51", app.serverKey());
        assertError(deep, 422, "validation_failed");
        assertThat(deep.json().path("error").path("details").toString()).contains("page").contains("cursor");
        TestApi.Response bad = api.get("/v1/notifications/" + id + "/recipients?cursor=not-a-cursor", app.serverKey());
        assertError(bad, 422, "validation_failed");
        assertThat(bad.json().path("error").path("details").toString()).contains("cursor");
        assertError(api.get("/v1/notifications/" + id + "/recipients?page=2&cursor=" + next, app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/notifications/" + id + "/recipients?cursor=" + next + "&cursor=" + next, app.serverKey()),
                422, "validation_failed");
        assertError(api.get("/v1/notifications/" + id + "/recipients?cursor=" + next, newApp().serverKey()), 404, "not_found");
    }

    /**
     * Excluded segments are an anti-join: PostgreSQL plans NOT EXISTS as one, where NOT IN (select …)
     * was a subplan evaluated again for every page.
     */
    @Test
    void excludedSegmentsArePlannedAsAnAntiJoin() {
        TestApp app = newApp();
        ios(app, ",\"external_user_id\":\"ann\",\"tags\":{\"plan\":\"gold\"}");
        android(app, "");
        String androids = segment(app, "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"android\"}");
        String gold = segment(app, "{\"field\":\"tag.plan\",\"operator\":\"eq\",\"value\":\"gold\"}");
        String id = create(app, "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},"
                + "\"excluded_segment_ids\":[\"" + androids + "\",\"" + gold + "\"]}");
        assertThat(recipients(app, id(materialized(app, id)))).isEmpty();

        JsonNode audience = tools.jackson.databind.json.JsonMapper.builder().build().readTree(
                jdbc.sql("select audience::text from notifications where id = cast(:id as uuid)").param("id", id)
                        .query(String.class).single());
        FanOutPageRepository.AudienceSql sql = fanOut.audience(app.appId(), audience);
        String plan = String.join("\n", jdbc.sql("explain select d.id from devices d " + sql.joins()
                        + " where d.app_id = :app and d.enabled and (" + sql.predicate() + ")")
                .param("app", app.appId()).params(sql.params()).query(String.class).list());
        assertThat(plan.split("Anti Join", -1)).as(plan).hasSize(3); // one per excluded segment
    }

    // --- idempotency ---------------------------------------------------------------------------

    @Test
    void concurrentRetriesWithOneKeyCreateOneNotification() throws Exception {
        TestApp app = newApp();
        ios(app, "");
        String body = content("{\"type\":\"all\"}");
        int n = 16;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Callable<TestApi.Response>> calls = new ArrayList<>();
            for (int i = 0; i < n; i++) calls.add(() -> send(app, "same-key", body));
            List<TestApi.Response> answers = new ArrayList<>();
            for (Future<TestApi.Response> f : pool.invokeAll(calls)) answers.add(f.get());
            assertThat(answers).allSatisfy(r -> assertThat(r.status()).as(r.toString()).isEqualTo(202));
            assertThat(answers.stream().map(r -> r.json().path("notification_id").asString()).distinct()).hasSize(1);
            assertThat(answers.stream().filter(r -> !r.json().path("idempotent_replay").asBoolean())).hasSize(1);
            assertThat(answers.stream().map(r -> r.json().path("created_at").asString()).distinct()).hasSize(1);
        } finally {
            pool.shutdown();
        }
        assertThat(notificationsOf(app)).isEqualTo(1);

        // the same key in another app is another notification
        TestApp other = newApp();
        assertThat(send(other, "same-key", body).json().path("idempotent_replay").asBoolean()).isFalse();
    }

    @Test
    void aKeyReusedWithAnotherBodyIsRefusedAndAFailedRequestDoesNotUseUpItsKey() {
        TestApp app = newApp();
        TestApi.Response bad = send(app, "k", "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"everyone\"}}");
        assertError(bad, 422, "validation_failed");
        assertThat(notificationsOf(app)).isZero();

        TestApi.Response first = send(app, "k", "{\"body\":\"b\",\"title\":\"t\",\"target\":{\"type\":\"all\"}}");
        assertThat(first.status()).isEqualTo(202);
        assertThat(first.json().path("idempotent_replay").asBoolean()).isFalse();
        // same body, other key order and an unknown field: a replay
        TestApi.Response replay = send(app, "k", "{\"target\":{\"type\":\"all\"},\"title\":\"t\",\"body\":\"b\",\"x\":1}");
        assertThat(replay.status()).isEqualTo(202);
        assertThat(replay.json().path("idempotent_replay").asBoolean()).isTrue();
        assertThat(replay.json().path("notification_id")).isEqualTo(first.json().path("notification_id"));

        TestApi.Response different = send(app, "k", "{\"title\":\"t\",\"body\":\"other\",\"target\":{\"type\":\"all\"}}");
        assertError(different, 422, "validation_failed");
        assertThat(different.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("Idempotency-Key");
        assertThat(notificationsOf(app)).isEqualTo(1);
    }

    @Test
    void idempotencyKeyIsRequiredAndBounded() {
        TestApp app = newApp();
        String body = content("{\"type\":\"all\"}");
        for (String key : new String[]{null, "", "x".repeat(256), "has space", "naïve"}) {
            TestApi.Response r = key == null || !key.chars().allMatch(c -> c < 128) ? sendRaw(app, key, body) : send(app, key, body);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(String.valueOf(key)).contains("Idempotency-Key");
        }
        assertThat(send(app, "x".repeat(255), body).status()).isEqualTo(202);
        assertThat(notificationsOf(app)).isEqualTo(1);
    }

    /** Non-ASCII header values cannot go through the JDK client; send them as raw bytes. */
    private TestApi.Response sendRaw(TestApp app, String key, String body) {
        if (key == null) return send(app, null, body);
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            byte[] payload = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            String head = "POST /v1/notifications HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + app.serverKey()
                    + "\r\nContent-Type: application/json\r\nContent-Length: " + payload.length + "\r\nConnection: close\r\nIdempotency-Key: ";
            var out = socket.getOutputStream();
            out.write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.write(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            out.write("\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.write(payload);
            out.flush();
            String response = new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            int status = Integer.parseInt(response.substring(9, 12));
            String json = response.substring(response.indexOf("\r\n\r\n") + 4);
            if (response.toLowerCase().contains("transfer-encoding: chunked")) {
                json = json.substring(json.indexOf("\r\n") + 2, json.lastIndexOf("}") + 1);
            }
            java.util.Map<String, List<String>> headers = new java.util.HashMap<>();
            for (String line : response.substring(0, response.indexOf("\r\n\r\n")).split("\r\n")) {
                int colon = line.indexOf(':');
                if (colon > 0) headers.put(line.substring(0, colon), List.of(line.substring(colon + 1).trim()));
            }
            return new TestApi.Response(status, headers, json);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Set<String> fields(TestApi.Response r) {
        Set<String> fields = new HashSet<>();
        r.json().path("error").path("details").forEach(d -> fields.add(d.path("field").asString()));
        return fields;
    }

    // --- bad input -----------------------------------------------------------------------------

    @Test
    void aNameIsNeverBlankAndHasNoControlCharacters() {
        TestApp app = newApp();
        for (String name : new String[]{"", "   ", "line\\nbreak", "bell\\u0007"}) {
            TestApi.Response r = send(app, UUID.randomUUID().toString(), "{\"name\":\"" + name + "\",\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(name).containsExactly("name");
        }
        assertThat(notificationsOf(app)).isZero();
        String id = create(app, "{\"name\":\"spring sale\",\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        assertThat(summary(app, id).path("name").asString()).isEqualTo("spring sale");
    }

    @Test
    void scheduledAtIsAnRfc3339InstantAndReadsBackAsAnswered() {
        TestApp app = newApp();
        for (String at : new String[]{"0000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "+10000-01-01T00:00:00Z"}) {
            TestApi.Response r = send(app, UUID.randomUUID().toString(),
                    "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},\"scheduled_at\":\"" + at + "\"}");
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(at).containsExactly("scheduled_at");
        }
        assertThat(notificationsOf(app)).isZero();
        // past-dated sends go at once, whatever the year; before 1582 the Julian calendar used to shift the read-back
        for (String at : new String[]{"0001-01-01T00:00:00Z", "1500-03-01T12:00:00Z"}) {
            TestApi.Response r = send(app, UUID.randomUUID().toString(),
                    "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},\"scheduled_at\":\"" + at + "\"}");
            assertThat(r.status()).as(r.toString()).isEqualTo(202);
            assertThat(r.json().path("status").asString()).isEqualTo("queued");
            assertThat(r.json().path("scheduled_at").asString()).isEqualTo(at);
            assertThat(summary(app, r.json().path("notification_id").asString()).path("scheduled_at").asString()).isEqualTo(at);
        }
    }

    @Test
    void limitsCountCharactersNotUtf16Units() {
        TestApp app = newApp();
        String emoji = "\uD83D\uDE00"; // one character, two UTF-16 units
        String id = create(app, "{\"name\":\"" + emoji.repeat(190) + "\",\"title\":\"" + emoji.repeat(250) + "\",\"body\":\""
                + emoji.repeat(4096) + "\",\"collapse_id\":\"" + emoji.repeat(64) + "\",\"target\":{\"type\":\"all\"},"
                + "\"actions\":[{\"id\":\"a\",\"text\":\"" + emoji.repeat(100) + "\"}],"
                + "\"platform_overrides\":{\"ios\":{\"subtitle\":\"" + emoji.repeat(250) + "\"}}}");
        JsonNode n = summary(app, id);
        assertThat(n.path("name").asString()).isEqualTo(emoji.repeat(190));
        assertThat(n.path("content").path("title").asString()).isEqualTo(emoji.repeat(250));
        TestApi.Response over = send(app, UUID.randomUUID().toString(), "{\"title\":\"" + emoji.repeat(251)
                + "\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        assertError(over, 422, "validation_failed");
        assertThat(fields(over)).containsExactly("title");
    }

    @Test
    void aBodyThatIsNotUtf8IsMalformedAndCreatesNothing() {
        TestApp app = newApp();
        byte[][] bodies = {
                // an overlong encoding of '/': decoded leniently it became "t/"
                bytes("{\"title\":\"t", 0xC0, 0xAF, "\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}"),
                // Latin-1 é
                bytes("{\"title\":\"t", 0xE9, "\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}"),
                // beyond U+10FFFF
                bytes("{\"title\":\"t", 0xF4, 0x90, 0x80, 0x80, "\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}"),
                // cut off in the middle of a character
                bytes("{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}", 0xE2, 0x82),
        };
        for (String contentType : new String[]{"application/json", "application/json; charset=iso-8859-1"}) {
            for (byte[] body : bodies) {
                TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey())
                        .header("Content-Type", contentType).header("Idempotency-Key", UUID.randomUUID().toString())
                        .POST(HttpRequest.BodyPublishers.ofByteArray(body)));
                assertError(r, 400, "malformed_request");
            }
        }
        assertThat(notificationsOf(app)).isZero();
        // real UTF-8 beyond ASCII is fine: two- three- and four-byte characters
        String id = create(app, "{\"title\":\"\u00e9\u20ac\uD83D\uDE00\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        assertThat(summary(app, id).path("content").path("title").asString()).isEqualTo("\u00e9\u20ac\uD83D\uDE00");
    }

    @Test
    void aNumberTooLargeForADoubleIsRefusedNotStoredAsAString() {
        TestApp app = newApp();
        String base = "\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}";
        TestApi.Response r = send(app, UUID.randomUUID().toString(),
                "{" + base + ",\"data\":{\"price\":1e999,\"list\":[-2.5E400]},\"template_data\":{\"big\":1" + "0".repeat(400) + ".5}}");
        assertError(r, 422, "validation_failed");
        assertThat(fields(r)).containsExactlyInAnyOrder("data.price", "data.list[0]", "template_data.big");
        assertThat(notificationsOf(app)).isZero();
        // large but finite numbers are kept as numbers
        String id = create(app, "{" + base + ",\"data\":{\"price\":1.5e300,\"n\":12345678901234567890}}");
        JsonNode data = summary(app, id).path("content").path("data");
        assertThat(data.path("price").isNumber()).as(data.toString()).isTrue();
        assertThat(data.path("price").asDouble()).isEqualTo(1.5e300);
        assertThat(data.path("n").isNumber()).as(data.toString()).isTrue();
    }

    @Test
    void aClientThatRefusesJsonGetsA406BeforeAnythingIsCreated() {
        TestApp app = newApp();
        String body = content("{\"type\":\"all\"}");
        for (String accept : new String[]{"text/plain", "application/xml", "application/json;q=0", "not a media type"}) {
            TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey())
                    .header("Content-Type", "application/json").header("Accept", accept)
                    .header("Idempotency-Key", UUID.randomUUID().toString()).POST(HttpRequest.BodyPublishers.ofString(body)));
            assertError(r, 406, "not_acceptable");
            assertThat(r.header("Content-Type").orElseThrow()).as(accept).startsWith("application/json");
        }
        assertThat(notificationsOf(app)).isZero();
        // an error answered for another reason is JSON too, not an empty 406 (no route: 404)
        TestApi.Response missing = api.send(api.request("/v1/notifications/" + UUID.randomUUID() + "/nothing", app.serverKey())
                .header("Accept", "text/html"));
        assertError(missing, 404, "not_found");
        for (String accept : new String[]{"application/json", "application/*", "*/*", "text/html, application/json;q=0.1"}) {
            TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey())
                    .header("Content-Type", "application/json").header("Accept", accept)
                    .header("Idempotency-Key", UUID.randomUUID().toString()).POST(HttpRequest.BodyPublishers.ofString(body)));
            assertThat(r.status()).as(accept + " " + r).isEqualTo(202);
        }
    }

    @Test
    void optionsIsA405ListingTheMethods() {
        TestApp app = newApp();
        TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey())
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()));
        assertError(r, 405, "method_not_allowed");
        assertThat(r.header("Allow").orElseThrow()).isEqualTo("GET, POST");
        TestApi.Response one = api.send(api.request("/v1/notifications/" + UUID.randomUUID() + "/cancel", app.serverKey())
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()));
        assertError(one, 405, "method_not_allowed");
        assertThat(one.header("Allow").orElseThrow()).isEqualTo("POST");
    }

    /** Text as UTF-8 and single bytes (ints), in order. */
    private static byte[] bytes(Object... parts) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (Object part : parts) {
            if (part instanceof String s) out.writeBytes(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            else out.write((Integer) part);
        }
        return out.toByteArray();
    }

    @Test
    void everyBrokenFieldIsA422NamingItAndCreatesNothing() {
        TestApp app = newApp();
        TestApp other = newApp();
        UUID othersDevice = ios(other, "");
        String othersSegment = segment(other, "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}");
        String archivedSegment = segment(app, "{\"field\":\"platform\",\"operator\":\"eq\",\"value\":\"ios\"}");
        assertThat(api.delete("/v1/segments/" + archivedSegment, app.serverKey()).status()).isEqualTo(200);
        String base = "\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}";
        String[][] cases = {
                {"{\"body\":\"b\",\"target\":{\"type\":\"all\"}}", "title"},
                {"{\"title\":\"t\",\"target\":{\"type\":\"all\"}}", "body"},
                {"{\"title\":\"t\",\"body\":\"b\"}", "target"},
                {"{" + base + ",\"name\":\"" + "n".repeat(191) + "\"}", "name"},
                {"{\"title\":\"" + "t".repeat(251) + "\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}", "title"},
                {"{\"title\":\"t\",\"body\":\"" + "b".repeat(4097) + "\",\"target\":{\"type\":\"all\"}}", "body"},
                {"{\"title\":12345,\"body\":\"b\",\"target\":{\"type\":\"all\"}}", "title"},
                {"{" + base + ",\"image_url\":\"" + "u".repeat(2049) + "\"}", "image_url"},
                {"{" + base + ",\"click_url\":\"" + "u".repeat(2049) + "\"}", "click_url"},
                {"{" + base + ",\"data\":[1]}", "data"},
                {"{" + base + ",\"template_id\":\"nope\"}", "template_id"},
                {"{" + base + ",\"template_id\":\"" + UUID.randomUUID() + "\"}", "template_id"},
                {"{" + base + ",\"template_data\":\"x\"}", "template_data"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"everyone\"}}", "target.type"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":\"all\"}", "target"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"device\"}}", "target.device_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"device\",\"device_id\":\"123\"}}", "target.device_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"device\",\"device_id\":\"" + UUID.randomUUID() + "\"}}", "target.device_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"device\",\"device_id\":\"" + othersDevice + "\"}}", "target.device_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"user\",\"external_user_id\":\"nobody\"}}", "target.external_user_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"user\",\"external_user_id\":\"" + "u".repeat(191) + "\"}}", "target.external_user_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"tag\",\"key\":\"bad key\",\"value\":\"v\"}}", "target.key"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"tag\",\"key\":\"k\"}}", "target.value"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"tag\",\"key\":\"k\",\"value\":{}}}", "target.value"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"segment\",\"segment_id\":\"" + othersSegment + "\"}}", "target.segment_id"},
                {"{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"segment\",\"segment_id\":\"" + archivedSegment + "\"}}", "target.segment_id"},
                {"{" + base + ",\"included_segment_ids\":[\"" + othersSegment + "\"]}", "included_segment_ids[0]"},
                {"{" + base + ",\"excluded_segment_ids\":[\"" + archivedSegment + "\"]}", "excluded_segment_ids[0]"},
                {"{" + base + ",\"included_segment_ids\":[\"x\"]}", "included_segment_ids[0]"},
                {"{" + base + ",\"included_segment_ids\":\"" + othersSegment + "\"}", "included_segment_ids"},
                {"{" + base + ",\"excluded_segment_ids\":[" + uuids(51) + "]}", "excluded_segment_ids"},
                {"{" + base + ",\"priority\":\"urgent\"}", "priority"},
                {"{" + base + ",\"interruption_level\":\"loud\"}", "interruption_level"},
                {"{" + base + ",\"scheduled_at\":\"2030-01-01T10:00:00\"}", "scheduled_at"},
                {"{" + base + ",\"scheduled_at\":\"tomorrow\"}", "scheduled_at"},
                {"{" + base + ",\"scheduled_at\":\"2999-01-01T10:00:00Z\"}", "scheduled_at"},
                // a past year timestamptz cannot hold (a 500 before), and year 0, outside 0001..9999
                {"{" + base + ",\"scheduled_at\":\"-999999999-01-01T00:00:00Z\"}", "scheduled_at"},
                {"{" + base + ",\"scheduled_at\":\"0000-06-01T00:00:00Z\"}", "scheduled_at"},
                {"{" + base + ",\"ttl\":-1}", "ttl"},
                {"{" + base + ",\"ttl\":2419201}", "ttl"},
                {"{" + base + ",\"ttl\":\"60\"}", "ttl"},
                {"{" + base + ",\"ttl\":60.5}", "ttl"},
                {"{" + base + ",\"collapse_id\":\"" + "c".repeat(65) + "\"}", "collapse_id"},
                {"{" + base + ",\"sound\":\"" + "s".repeat(101) + "\"}", "sound"},
                {"{" + base + ",\"category\":\"" + "c".repeat(101) + "\"}", "category"},
                {"{" + base + ",\"badge\":-1}", "badge"},
                {"{" + base + ",\"badge\":\"1\"}", "badge"},
                {"{" + base + ",\"actions\":[{\"id\":\"a\",\"text\":\"A\"},{\"id\":\"b\",\"text\":\"B\"},{\"id\":\"c\",\"text\":\"C\"},{\"id\":\"d\",\"text\":\"D\"}]}", "actions"},
                {"{" + base + ",\"actions\":[{\"id\":\"a\"}]}", "actions[0].text"},
                {"{" + base + ",\"actions\":[{\"id\":\"a\",\"text\":\"A\"},{\"id\":\"a\",\"text\":\"B\"}]}", "actions[1].id"},
                {"{" + base + ",\"actions\":[\"a\"]}", "actions[0]"},
                {"{" + base + ",\"content_available\":\"yes\"}", "content_available"},
                {"{" + base + ",\"frequency_cap_override\":1}", "frequency_cap_override"},
                {"{" + base + ",\"local_delivery_time\":\"24:00\"}", "local_delivery_time"},
                {"{" + base + ",\"local_delivery_time\":\"9:30\"}", "local_delivery_time"},
                {"{" + base + ",\"localizations\":{\"not a locale\":{\"title\":\"x\"}}}", "localizations"},
                {"{" + base + ",\"localizations\":{\"de\":{\"title\":\"" + "t".repeat(251) + "\"}}}", "localizations.de.title"},
                {"{" + base + ",\"localizations\":{\"de\":{}}}", "localizations.de"},
                {"{" + base + ",\"localizations\":{\"de\":\"Hallo\"}}", "localizations.de"},
                {"{" + base + ",\"platform_overrides\":{\"ios\":{\"thread_id\":5}}}", "platform_overrides.ios.thread_id"},
                {"{" + base + ",\"platform_overrides\":{\"ios\":{\"volume\":1}}}", "platform_overrides.ios.volume"},
                {"{" + base + ",\"platform_overrides\":{\"ios\":{\"badge\":-1}}}", "platform_overrides.ios.badge"},
                {"{" + base + ",\"platform_overrides\":{\"ios\":{\"relevance_score\":1.5}}}", "platform_overrides.ios.relevance_score"},
                {"{" + base + ",\"platform_overrides\":{\"android\":{\"channel_id\":\"" + "c".repeat(101) + "\"}}}", "platform_overrides.android.channel_id"},
                {"{" + base + ",\"platform_overrides\":{\"android\":{\"priority\":\"urgent\"}}}", "platform_overrides.android.priority"},
                {"{" + base + ",\"platform_overrides\":{\"web\":{\"icon\":\"https://x/\\u0007.png\"}}}", "platform_overrides.web.icon"},
                {"{" + base + ",\"platform_overrides\":{\"web\":\"loud\"}}", "platform_overrides.web"},
                {"{" + base + ",\"localizations\":{\"pt_BR\":{\"title\":\"a\"},\"pt-br\":{\"title\":\"b\"}}}", "localizations"},
                {"{" + base + ",\"localizations\":{\"de\":{\"body\":\"{{ nope }}\"}}}", "localizations.de.body"},
                {"{" + base + ",\"localizations\":{\"de\":{\"click_url\":\"\"}}}", "localizations.de.click_url"},
                {"{" + base + ",\"localizations\":{\"de\":{\"title\":\"Hallo\",\"subtitle\":\"x\"}}}", "localizations.de.subtitle"},
                {"{" + base + ",\"platform_overrides\":{\"android\":{\"color\":\"red\"}}}", "platform_overrides.android.color"},
                {"{" + base + ",\"platform_overrides\":{\"web\":{\"require_interaction\":\"yes\"}}}", "platform_overrides.web.require_interaction"},
                {"{" + base + ",\"platform_overrides\":{\"windows\":{}}}", "platform_overrides.windows"},
                {"{\"title\":\"{{ nope }}\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}", "title"},
        };
        for (String[] c : cases) {
            TestApi.Response r = send(app, "bad-" + UUID.randomUUID(), c[0]);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(c[0] + " -> " + r.body()).contains(c[1]);
        }
        assertThat(notificationsOf(app)).isZero();
    }

    private static String uuids(int n) {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) ids.add("\"" + UUID.randomUUID() + "\"");
        return String.join(",", ids);
    }

    /**
     * The spec's "deep link or HTTPS destination": a click URL that would run script, show inline
     * content, open a local file or travel in plaintext is refused wherever content is accepted, and
     * so is one whose scheme a placeholder could choose; an image must be https (iOS and browsers load
     * no other). docs/api-decisions.md, "Notification URLs".
     */
    @Test
    void clickUrlsMustBeHttpsOrAnAppDeepLinkAndImagesHttps() {
        TestApp app = newApp();
        String base = "\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}";
        List<String> clicks = List.of("javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "data:text/html,<b>hi</b>",
                "vbscript:msgbox(1)", "file:///etc/passwd", "http://example.com/x", "HTTP://example.com/x", "example.com/x",
                "//example.com/x", "/orders/17", "https://", "https:///x", "https:example.com", "myapp:", "{{ template.link }}",
                "{{ template.scheme }}://x");
        List<String> images = List.of("http://img.example/x.png", "img.example/x.png", "//img.example/x.png",
                "data:image/png;base64,AAAA", "javascript:alert(1)", "myapp://x.png", "https://");
        List<String[]> cases = new ArrayList<>();
        for (String url : clicks) {
            cases.add(new String[]{"{" + base + ",\"click_url\":\"" + url + "\"}", "click_url"});
            cases.add(new String[]{"{" + base + ",\"localizations\":{\"de\":{\"click_url\":\"" + url + "\"}}}", "localizations.de.click_url"});
        }
        for (String url : images) {
            cases.add(new String[]{"{" + base + ",\"image_url\":\"" + url + "\"}", "image_url"});
            cases.add(new String[]{"{" + base + ",\"localizations\":{\"de\":{\"image_url\":\"" + url + "\"}}}", "localizations.de.image_url"});
            cases.add(new String[]{"{" + base + ",\"platform_overrides\":{\"web\":{\"icon\":\"" + url + "\"}}}", "platform_overrides.web.icon"});
            cases.add(new String[]{"{" + base + ",\"platform_overrides\":{\"web\":{\"badge\":\"" + url + "\"}}}", "platform_overrides.web.badge"});
        }
        for (String[] c : cases) {
            TestApi.Response r = send(app, UUID.randomUUID().toString(), c[0]);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(c[0] + " -> " + r.body()).containsExactly(c[1]);
        }
        assertThat(notificationsOf(app)).isZero();

        for (String url : List.of("https://example.com/x", "HTTPS://Example.com", "https://example.com:8443/o?id=1#top",
                "myapp://orders/17", "myapp:inbox", "com.example.app://open", "myapp://orders/{{ template.order_id }}",
                "https://example.com/u/{{ external_user_id }}")) {
            create(app, "{" + base + ",\"click_url\":\"" + url + "\",\"localizations\":{\"de\":{\"click_url\":\"" + url + "\"}}}");
        }
        for (String url : List.of("https://img.example/x.png", "HTTPS://img.example/x.png?size=2")) {
            create(app, "{" + base + ",\"image_url\":\"" + url + "\",\"platform_overrides\":{\"web\":{\"icon\":\"" + url
                    + "\",\"badge\":\"" + url + "\"}}}");
        }
    }

    /**
     * An empty {@code collapse_id}, {@code sound} or {@code category} is not "none" (leave it out for
     * none), and a title or body may hold line breaks and tabs but no other control character.
     */
    @Test
    void emptyIdentifiersAndControlCharactersInTextAreRefused() {
        TestApp app = newApp();
        String base = "\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"}";
        String target = "\"target\":{\"type\":\"all\"}";
        String[][] cases = {
                {"{" + base + ",\"collapse_id\":\"\"}", "collapse_id"},
                {"{" + base + ",\"collapse_id\":\" \"}", "collapse_id"},
                {"{" + base + ",\"collapse_id\":\"a\\u0001b\"}", "collapse_id"},
                {"{" + base + ",\"sound\":\"\"}", "sound"},
                {"{" + base + ",\"sound\":\"ping\\n.caf\"}", "sound"},
                {"{" + base + ",\"category\":\"\"}", "category"},
                {"{\"title\":\"a\\u0007b\",\"body\":\"b\"," + target + "}", "title"},
                {"{\"title\":\"t\",\"body\":\"\\u001b[31mred\"," + target + "}", "body"},
                {"{\"title\":\"t\",\"body\":\"del\\u007f\"," + target + "}", "body"},
                {"{\"title\":\"t\",\"body\":\"c1\\u0085\"," + target + "}", "body"},
                {"{" + base + ",\"localizations\":{\"de\":{\"title\":\"a\\u000bb\"}}}", "localizations.de.title"},
                {"{" + base + ",\"localizations\":{\"de\":{\"title\":\"a\\u0008b\"}}}", "localizations.de.title"},
        };
        for (String[] c : cases) {
            TestApi.Response r = send(app, UUID.randomUUID().toString(), c[0]);
            assertError(r, 422, "validation_failed");
            assertThat(fields(r)).as(c[0] + " -> " + r.body()).containsExactly(c[1]);
        }
        assertThat(notificationsOf(app)).isZero();

        String id = create(app, "{\"title\":\"Line one\\tand\",\"body\":\"a\\nb\\r\\nc\",\"collapse_id\":\"c\",\"sound\":\"ping.caf\","
                + "\"category\":\"MSG\",\"localizations\":{\"de\":{\"body\":\"x\\ny\"}}," + target + "}");
        JsonNode content = api.get("/v1/notifications/" + id, app.serverKey()).json().path("content");
        assertThat(content.path("body").asString()).isEqualTo("a\nb\r\nc");
        assertThat(content.path("title").asString()).isEqualTo("Line one\tand");
    }

    /**
     * The error shape lists every problem, so a request without {@code Idempotency-Key} is told all
     * that is wrong with it at once: the body's fields, and with a well-formed body what only the
     * app's data shows (no title after the template, an unknown device).
     */
    @Test
    void aMissingIdempotencyKeyIsReportedWithEveryOtherProblem() {
        TestApp app = newApp();
        TestApi.Response noTitle = send(app, null, "{\"body\":\"b\",\"target\":{\"type\":\"all\"}}");
        assertError(noTitle, 422, "validation_failed");
        assertThat(fields(noTitle)).containsExactlyInAnyOrder("Idempotency-Key", "title");
        assertThat(noTitle.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("Idempotency-Key");

        TestApi.Response badTtl = send(app, "", "{\"title\":\"t\",\"body\":\"b\",\"ttl\":-1,\"target\":{\"type\":\"all\"}}");
        assertThat(fields(badTtl)).containsExactlyInAnyOrder("Idempotency-Key", "ttl");

        TestApi.Response unknownDevice = send(app, null, content("{\"type\":\"device\",\"device_id\":\"" + UUID.randomUUID() + "\"}"));
        assertThat(fields(unknownDevice)).containsExactlyInAnyOrder("Idempotency-Key", "target.device_id");

        TestApi.Response onlyTheKey = send(app, null, content("{\"type\":\"all\"}"));
        assertThat(fields(onlyTheKey)).containsExactly("Idempotency-Key");
        assertThat(notificationsOf(app)).isZero();
    }

    @Test
    void everyFieldAtItsLimitIsAcceptedAndStored() {
        TestApp app = newApp();
        ios(app, "");
        String body = "{\"name\":\"" + "n".repeat(190) + "\",\"title\":\"" + "t".repeat(250) + "\",\"body\":\"" + "b".repeat(4096)
                + "\",\"image_url\":\"https://img.example/x.png\",\"click_url\":\"app://x\",\"data\":{\"k\":\"v\"},"
                + "\"localizations\":{\"de\":{\"title\":\"Hallo\",\"body\":\"Welt\"},\"pt_BR\":{\"body\":\"Olá\"}},"
                + "\"target\":{\"type\":\"all\"},\"priority\":\"transactional\",\"interruption_level\":\"critical\","
                + "\"ttl\":2419200,\"collapse_id\":\"" + "c".repeat(64) + "\",\"sound\":\"ping.caf\",\"badge\":3,"
                + "\"category\":\"MSG\",\"actions\":[{\"id\":\"a\",\"text\":\"A\",\"icon\":\"https://i/a.png\"},{\"id\":\"b\",\"text\":\"B\"},"
                + "{\"id\":\"c\",\"text\":\"C\"}],\"content_available\":true,\"frequency_cap_override\":true,"
                + "\"local_delivery_time\":\"23:59\",\"platform_overrides\":{\"ios\":{\"thread_id\":\"t1\",\"relevance_score\":0.5},"
                + "\"android\":{\"color\":\"#FF0000\",\"priority\":\"high\"},\"web\":{\"icon\":\"https://i/w.png\",\"require_interaction\":true}}}";
        TestApi.Response r = send(app, "limits", body);
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("interruption_level").asString()).isEqualTo("critical");
        JsonNode s = summary(app, r.json().path("notification_id").asString());
        assertThat(s.path("priority").asString()).isEqualTo("transactional");
        assertThat(s.path("ttl").asInt()).isEqualTo(2419200);
        assertThat(s.path("local_delivery_time").asString()).isEqualTo("23:59");
        assertThat(s.path("frequency_cap_override").asBoolean()).isTrue();
        JsonNode c = s.path("content");
        assertThat(c.path("actions")).hasSize(3);
        assertThat(c.path("localizations").path("pt_BR").path("body").asString()).isEqualTo("Olá");
        assertThat(c.path("platform_overrides").path("android").path("color").asString()).isEqualTo("#FF0000");
        assertThat(c.path("badge").asInt()).isEqualTo(3);
        assertThat(c.path("content_available").asBoolean()).isTrue();
    }

    // --- reads, scopes, other apps -------------------------------------------------------------

    @Test
    void listIsNewestFirstWithDeliveryState() {
        TestApp app = newApp();
        String first = create(app, content("{\"type\":\"all\"}"));
        String second = create(app, content("{\"type\":\"all\"}"));
        TestApi.Response page = api.get("/v1/notifications?limit=1", app.serverKey());
        assertThat(page.status()).as(page.toString()).isEqualTo(200);
        assertThat(page.json().path("data").get(0).path("notification_id").asString()).isEqualTo(second);
        assertThat(page.json().path("pagination").path("has_more").asBoolean()).isTrue();
        TestApi.Response next = api.get("/v1/notifications?limit=1&page=2", app.serverKey());
        assertThat(next.json().path("data").get(0).path("notification_id").asString()).isEqualTo(first);
        assertThat(next.json().path("data").get(0).has("counts")).isTrue();
        assertError(api.get("/v1/notifications?limit=0", app.serverKey()), 422, "validation_failed");
    }

    @Test
    void anotherAppsNotificationIsNotFoundEverywhere() {
        TestApp app = newApp();
        TestApp other = newApp();
        String id = create(other, content("{\"type\":\"all\"}"));
        assertError(api.get("/v1/notifications/" + id, app.serverKey()), 404, "not_found");
        assertError(api.post("/v1/notifications/" + id + "/cancel", app.serverKey(), ""), 404, "not_found");
        assertError(api.get("/v1/notifications/" + id + "/recipients", app.serverKey()), 404, "not_found");
        assertError(api.get("/v1/notifications/" + id + "/events", app.serverKey()), 404, "not_found");
        assertError(api.get("/v1/notifications/not-a-uuid", app.serverKey()), 422, "validation_failed");
        assertError(api.get("/v1/notifications", app.publicKey()), 403, "forbidden");
        assertError(api.get("/v1/notifications", serverKey(app, Scope.NOTIFICATIONS_WRITE)), 403, "forbidden");
        TestApi.Response readOnly = api.send(api.request("/v1/notifications", serverKey(app, Scope.NOTIFICATIONS_READ))
                .header("Content-Type", "application/json").header("Idempotency-Key", "k")
                .POST(HttpRequest.BodyPublishers.ofString(content("{\"type\":\"all\"}"))));
        assertError(readOnly, 403, "forbidden");
    }

    @Test
    void eventsTiedToANotificationAreListedAndEventsNamingAnotherAppsNotificationAreRefused() {
        TestApp app = newApp();
        TestApp other = newApp();
        UUID device = ios(app, "");
        String id = create(app, content("{\"type\":\"all\"}"));
        String foreign = create(other, content("{\"type\":\"all\"}"));

        TestApi.Response opened = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"opened\",\"notification_id\":\""
                + id + "\",\"device_id\":\"" + device + "\",\"metadata\":{\"button\":\"a\"}}");
        assertThat(opened.status()).as(opened.toString()).isEqualTo(202);
        for (String bad : new String[]{foreign, UUID.randomUUID().toString()}) {
            TestApi.Response refused = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"opened\",\"notification_id\":\"" + bad + "\"}");
            assertError(refused, 422, "validation_failed");
            assertThat(fields(refused)).containsExactly("notification_id");
        }

        TestApi.Response events = api.get("/v1/notifications/" + id + "/events", app.serverKey());
        assertThat(events.status()).as(events.toString()).isEqualTo(200);
        assertThat(events.json().path("data")).hasSize(1);
        JsonNode e = events.json().path("data").get(0);
        assertThat(e.path("event_type").asString()).isEqualTo("opened");
        assertThat(e.path("device_id").asString()).isEqualTo(device.toString());
        assertThat(e.path("properties").path("button").asString()).isEqualTo("a");
        assertThat(e.path("source").asString()).isEqualTo("client");
    }

    // --- fan-out robustness ------------------------------------------------------------------

    @Test
    void fanOutRunTwiceOrResumedAfterACrashAddsNoRecipientTwice() {
        TestApp app = newApp();
        Set<UUID> devices = new HashSet<>();
        for (int i = 0; i < 7; i++) devices.add(i % 2 == 0 ? ios(app, "") : android(app, ""));
        String id = create(app, content("{\"type\":\"all\"}"));
        materialized(app, id);
        UUID notification = UUID.fromString(id);

        // a crash after some pages: the cursor stands mid-way and the count is not set yet
        jdbc.sql("update notifications set recipient_count = null where id = :id").param("id", notification).update();
        fanOut.run(new NotificationFanOut.Data(app.appId(), notification));
        jdbc.sql("update notifications set recipient_count = null, fanout_cursor_at = null, fanout_cursor_id = null where id = :id")
                .param("id", notification).update();
        fanOut.run(new NotificationFanOut.Data(app.appId(), notification));
        fanOut.run(new NotificationFanOut.Data(app.appId(), notification));

        assertThat(recipientDevices(app, id)).isEqualTo(devices);
        assertThat(recipients(app, id)).hasSize(7);
        assertThat(summary(app, id).path("recipient_count").asInt()).isEqualTo(7);
    }
}
