package dev.pushservice.webhooks;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.standardwebhooks.Webhook;
import com.standardwebhooks.exceptions.WebhookVerificationException;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.support.TestTokens;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestClock;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Webhooks through the API with a real HTTP receiver on loopback: CRUD and secrets shown once,
 * 404 across apps, 422s, Standard Webhooks signatures checked by the official Java library,
 * rotation's two signatures, retries (Retry-After, timeout) with a stable {@code webhook-id}, 410,
 * redirects, isolation of a dead endpoint, and events from real actions.
 */
class WebhookTests extends ApiTest {

    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private Receiver receiver;
    @org.springframework.beans.factory.annotation.Autowired
    org.springframework.jdbc.core.simple.JdbcClient jdbc;
    @org.springframework.beans.factory.annotation.Autowired
    TestClock clock;

    @BeforeEach
    void startReceiver() {
        receiver = new Receiver();
    }

    @AfterEach
    void stopReceiver() {
        receiver.close();
        clock.reset();
    }

    // --- helpers -------------------------------------------------------------------------------

    private JsonNode create(TestApp app, String path, String events) {
        return createFor(app, receiver.url(path), events);
    }

    private JsonNode createFor(TestApp app, String url, String events) {
        TestApi.Response r = api.post("/v1/webhooks", app.serverKey(),
                "{\"url\":\"" + url + "\",\"description\":\"test\",\"events\":" + events + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json();
    }

    private TestApi.Response postEmpty(String key, String path) {
        return api.send(api.request(path, key).POST(HttpRequest.BodyPublishers.noBody()));
    }

    private String id(JsonNode webhook) {
        return webhook.path("webhook_id").asString();
    }

    private String queueTest(TestApp app, String webhookId) {
        TestApi.Response r = postEmpty(app.serverKey(), "/v1/webhooks/" + webhookId + "/test");
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        assertThat(r.json().path("event_type").asString()).isEqualTo("webhook.test");
        return r.json().path("delivery_id").asString();
    }

    private JsonNode webhook(TestApp app, String webhookId) {
        TestApi.Response r = api.get("/v1/webhooks?limit=200", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        for (JsonNode w : r.json().path("data")) if (id(w).equals(webhookId)) return w;
        throw new AssertionError("webhook " + webhookId + " not listed");
    }

    private JsonNode delivery(TestApp app, String webhookId, String deliveryId) {
        TestApi.Response r = api.get("/v1/webhooks/" + webhookId + "/deliveries", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        for (JsonNode d : r.json().path("data")) if (d.path("delivery_id").asString().equals(deliveryId)) return d;
        throw new AssertionError("delivery " + deliveryId + " not listed");
    }

    private static void verify(String secret, Receiver.Request request) throws WebhookVerificationException {
        new Webhook(secret).verify(request.body(), request.headers());
    }

    private static String hmac(String secret, Receiver.Request r) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(java.util.Base64.getDecoder().decode(secret.substring("whsec_".length())), "HmacSHA256"));
        String signed = r.header("webhook-id") + "." + r.header("webhook-timestamp") + "." + r.body();
        return "v1," + java.util.Base64.getEncoder().encodeToString(mac.doFinal(signed.getBytes(StandardCharsets.UTF_8)));
    }

    // --- CRUD ----------------------------------------------------------------------------------

    @Test
    void createShowsTheSecretOnceAndReadsNeverShowIt() {
        TestApp app = newApp();
        JsonNode created = create(app, "/crud", "[\"notification.completed\",\"device.invalidated\"]");
        String secret = created.path("secret").asString();
        assertThat(secret).matches("whsec_[A-Za-z0-9+/=]{44}");
        assertThat(created.path("enabled").asBoolean()).isTrue();
        assertThat(created.path("disabled_reason").isNull()).isTrue();
        assertThat(created.path("events").toString()).isEqualTo("[\"notification.completed\",\"device.invalidated\"]");

        // stored sealed: neither the secret nor its key bytes are in the row
        byte[] stored = jdbc.sql("select secret from webhooks where id = :id").param("id", UUID.fromString(id(created)))
                .query(byte[].class).single();
        byte[] key = java.util.Base64.getDecoder().decode(secret.substring("whsec_".length()));
        assertThat(new String(stored, StandardCharsets.ISO_8859_1)).doesNotContain(secret.substring("whsec_".length()))
                .doesNotContain(new String(key, StandardCharsets.ISO_8859_1));

        TestApi.Response list = api.get("/v1/webhooks", app.serverKey());
        assertThat(list.status()).isEqualTo(200);
        assertThat(list.json().path("data")).hasSize(1);
        assertThat(list.body()).doesNotContain(secret).doesNotContain("\"secret\"");

        TestApi.Response patched = api.patch("/v1/webhooks/" + id(created), app.serverKey(),
                "{\"description\":null,\"events\":[\"*\"],\"enabled\":false}");
        assertThat(patched.status()).as(patched.toString()).isEqualTo(200);
        assertThat(patched.json().has("secret")).isFalse();
        assertThat(patched.json().path("description").isNull()).isTrue();
        assertThat(patched.json().path("events").toString()).isEqualTo("[\"*\"]");
        assertThat(patched.json().path("enabled").asBoolean()).isFalse();

        TestApi.Response rotated = api.patch("/v1/webhooks/" + id(created), app.serverKey(), "{\"rotate_secret\":true}");
        assertThat(rotated.status()).as(rotated.toString()).isEqualTo(200);
        assertThat(rotated.json().path("secret").asString()).startsWith("whsec_").isNotEqualTo(secret);
        assertThat(api.get("/v1/webhooks", app.serverKey()).body()).doesNotContain("whsec_");

        TestApi.Response deleted = api.delete("/v1/webhooks/" + id(created), app.serverKey());
        assertThat(deleted.status()).as(deleted.toString()).isEqualTo(200);
        assertThat(deleted.json().path("deleted").asBoolean()).isTrue();
        assertError(api.delete("/v1/webhooks/" + id(created), app.serverKey()), 404, "not_found");
        assertThat(api.get("/v1/webhooks", app.serverKey()).json().path("data")).isEmpty();

        // every change is audited by field name, never a value (the secret included)
        List<String> audited = jdbc.sql("""
                        select action || ':' || array_to_string(changed_fields, ',') from audit_log
                        where app_id = :app and target_id = :id order by id""")
                .param("app", app.appId()).param("id", id(created)).query(String.class).list();
        assertThat(audited).containsExactly("webhook.create:description,events,url", "webhook.update:description,enabled,events",
                "webhook.update:secret", "webhook.delete:");
    }

    @Test
    void anotherAppsWebhookIsNotFoundOnEveryRoute() {
        TestApp owner = newApp();
        TestApp other = newApp();
        String id = id(create(owner, "/mine", "[\"*\"]"));
        assertError(api.patch("/v1/webhooks/" + id, other.serverKey(), "{\"enabled\":false}"), 404, "not_found");
        assertError(postEmpty(other.serverKey(), "/v1/webhooks/" + id + "/test"), 404, "not_found");
        assertError(api.get("/v1/webhooks/" + id + "/deliveries", other.serverKey()), 404, "not_found");
        assertError(api.delete("/v1/webhooks/" + id, other.serverKey()), 404, "not_found");
        assertThat(api.get("/v1/webhooks", other.serverKey()).json().path("data")).isEmpty();
        assertThat(webhook(owner, id).path("enabled").asBoolean()).isTrue();
        assertError(api.patch("/v1/webhooks/" + UUID.randomUUID(), owner.serverKey(), "{\"enabled\":false}"), 404, "not_found");
    }

    @Test
    void badBodiesAreRefusedNamingTheField() {
        TestApp app = newApp();
        TestApi.Response unknown = api.post("/v1/webhooks", app.serverKey(),
                "{\"url\":\"" + receiver.url("/x") + "\",\"events\":[\"notification.created\",\"notification.exploded\"]}");
        assertError(unknown, 422, "validation_failed");
        assertThat(unknown.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("events[1]");

        TestApi.Response several = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"ftp://example.com/x\",\"events\":[],\"enabled\":\"yes\"}");
        assertError(several, 422, "validation_failed");
        List<String> fields = new ArrayList<>();
        several.json().path("error").path("details").forEach(d -> fields.add(d.path("field").asString()));
        assertThat(fields).contains("events", "enabled");

        assertError(api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"ftp://example.com/x\",\"events\":[\"*\"]}"), 422, "validation_failed");
        assertError(api.post("/v1/webhooks", app.serverKey(), "{\"events\":[\"*\"]}"), 422, "validation_failed");
        assertError(api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"https://u:p@example.com/\",\"events\":[\"*\"]}"), 422, "validation_failed");
        String id = id(create(app, "/y", "[\"*\"]"));
        assertError(api.patch("/v1/webhooks/" + id, app.serverKey(), "{}"), 422, "validation_failed");
        assertError(api.patch("/v1/webhooks/" + id, app.serverKey(), "{\"events\":[\"nope\"]}"), 422, "validation_failed");
        assertError(api.patch("/v1/webhooks/not-a-uuid", app.serverKey(), "{\"enabled\":true}"), 422, "validation_failed");
        assertError(api.get("/v1/webhooks", serverKey(app, Scope.DEVICES_WRITE)), 403, "forbidden");
    }

    // --- signing -------------------------------------------------------------------------------

    @Test
    void testDeliveryIsSignedAndAcceptedByTheOfficialLibrary() throws Exception {
        TestApp app = newApp();
        JsonNode created = create(app, "/signed", "[\"notification.completed\"]");
        String secret = created.path("secret").asString();
        String deliveryId = queueTest(app, id(created));

        Receiver.Request r = receiver.next("/signed", WAIT);
        assertThat(r.header("webhook-id")).isEqualTo(deliveryId);
        assertThat(Long.parseLong(r.header("webhook-timestamp"))).isCloseTo(Instant.now().getEpochSecond(), org.assertj.core.data.Offset.offset(30L));
        assertThat(r.header("content-type")).startsWith("application/json");
        assertThatCode(() -> verify(secret, r)).doesNotThrowAnyException();
        assertThat(r.header("webhook-signature")).isEqualTo(hmac(secret, r));
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.path("type").asString()).isEqualTo("webhook.test");
        assertThat(Instant.parse(body.path("timestamp").asString())).isNotNull();
        assertThat(body.path("data").path("webhook_id").asString()).isEqualTo(id(created));

        // tampering is caught by the same library
        Map<String, List<String>> headers = new HashMap<>(r.headers());
        assertThatThrownBy(() -> new Webhook(secret).verify(r.body().replace("webhook.test", "webhook.tset"), headers))
                .isInstanceOf(WebhookVerificationException.class);

        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("status").asString()).isEqualTo("succeeded");
            assertThat(d.path("last_status_code").asInt()).isEqualTo(200);
            assertThat(d.path("attempts").asInt()).isEqualTo(1);
            assertThat(d.path("last_latency_ms").isIntegralNumber()).isTrue();
            assertThat(d.path("last_attempt_at").isNull()).isFalse();
            assertThat(d.path("next_attempt_at").isNull()).as("nothing left to try").isTrue();
        });
    }

    @Test
    void afterRotationDeliveriesCarrySignaturesOfBothSecrets() throws Exception {
        TestApp app = newApp();
        JsonNode created = create(app, "/rotated", "[\"*\"]");
        String oldSecret = created.path("secret").asString();
        String newSecret = api.patch("/v1/webhooks/" + id(created), app.serverKey(), "{\"rotate_secret\":true}")
                .json().path("secret").asString();
        queueTest(app, id(created));

        Receiver.Request r = receiver.next("/rotated", WAIT);
        String[] signatures = r.header("webhook-signature").split(" ");
        assertThat(signatures).containsExactly(hmac(newSecret, r), hmac(oldSecret, r));
        assertThatCode(() -> verify(newSecret, r)).doesNotThrowAnyException();
        assertThatCode(() -> verify(oldSecret, r)).doesNotThrowAnyException();
        byte[] unrelated = new byte[32];
        ThreadLocalRandom.current().nextBytes(unrelated);
        assertThatThrownBy(() -> verify("whsec_" + java.util.Base64.getEncoder().encodeToString(unrelated), r))
                .isInstanceOf(WebhookVerificationException.class);
    }

    @Test
    void afterTheGracePeriodOnlyTheNewSecretSigns() throws Exception {
        TestApp app = newApp();
        JsonNode created = create(app, "/graced", "[\"*\"]");
        String newSecret = api.patch("/v1/webhooks/" + id(created), app.serverKey(), "{\"rotate_secret\":true}")
                .json().path("secret").asString();
        clock.advance(Duration.ofHours(24).plusMinutes(1)); // PUSH_WEBHOOKS_ROTATION_GRACE is 24 h
        queueTest(app, id(created));

        Receiver.Request r = receiver.next("/graced", WAIT);
        assertThat(r.header("webhook-signature")).isEqualTo(hmac(newSecret, r));
    }

    // --- HTTPS ---------------------------------------------------------------------------------

    @Test
    void httpsDeliveriesToALocalReceiverVerifyWithTheOfficialLibrary() throws Exception {
        TestApp app = newApp();
        TestCertificates pki = TestCertificates.shared(); // its CA is PUSH_WEBHOOKS_TRUSTED_CA_FILE in tests
        try (Receiver https = Receiver.https(pki.serverKeys.getPrivate(), pki.server, pki.ca)) {
            assertThat(https.url("/secure")).startsWith("https://");
            JsonNode created = createFor(app, https.url("/secure"), "[\"device.registered\"]");
            String secret = created.path("secret").asString();
            String deliveryId = queueTest(app, id(created));
            TestApi.Response device = api.post("/v1/devices/register", app.publicKey(),
                    "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}");
            assertThat(device.status()).as(device.toString()).isEqualTo(201);

            Map<String, Receiver.Request> byType = new HashMap<>();
            while (byType.size() < 2) {
                Receiver.Request r = https.next("/secure", WAIT);
                assertThatCode(() -> verify(secret, r)).doesNotThrowAnyException();
                byType.put(JSON.readTree(r.body()).path("type").asString(), r);
            }
            assertThat(byType).containsOnlyKeys("webhook.test", "device.registered");
            assertThat(byType.get("webhook.test").header("webhook-id")).isEqualTo(deliveryId);
            assertThat(JSON.readTree(byType.get("device.registered").body()).path("data").path("device_id").asString())
                    .isEqualTo(device.json().path("device_id").asString());
            await().atMost(WAIT).untilAsserted(() -> {
                JsonNode d = delivery(app, id(created), deliveryId);
                assertThat(d.path("status").asString()).isEqualTo("succeeded");
                assertThat(d.path("last_status_code").asInt()).isEqualTo(200);
            });
        }
    }

    /**
     * A failed connection is an outcome the service records (the attempt's reason, its retry), not an
     * error for the operator's log: Reactor Netty logged each one as a WARN with a stack trace, so an
     * endpoint that is down flooded the log with one per attempt.
     */
    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void aFailedConnectionIsRecordedWithoutAStackTraceInTheLog(CapturedOutput output) {
        TestApp app = newApp();
        TestCertificates other = TestCertificates.unrelated();
        try (Receiver https = Receiver.https(other.serverKeys.getPrivate(), other.server, other.ca)) {
            JsonNode created = createFor(app, https.url("/untrusted-quiet"), "[\"*\"]");
            String deliveryId = queueTest(app, id(created));
            await().atMost(WAIT).untilAsserted(() -> assertThat(delivery(app, id(created), deliveryId)
                    .path("last_error").asString()).isEqualTo("certificate_untrusted"));
        }
        assertThat(output.getAll()).doesNotContain("The connection observed an error")
                .doesNotContain("at reactor.netty.");
    }

    @Test
    void anUntrustedCertificateIsRecordedAsTheReasonAndRetriedNotDropped() {
        TestApp app = newApp();
        TestCertificates other = TestCertificates.unrelated(); // a CA the service does not trust
        try (Receiver https = Receiver.https(other.serverKeys.getPrivate(), other.server, other.ca)) {
            JsonNode created = createFor(app, https.url("/untrusted"), "[\"*\"]");
            String deliveryId = queueTest(app, id(created));
            await().atMost(WAIT).untilAsserted(() -> {
                JsonNode d = delivery(app, id(created), deliveryId);
                assertThat(d.path("attempts").asInt()).isEqualTo(1);
                assertThat(d.path("status").asString()).isEqualTo("pending");
                assertThat(d.path("last_error").asString()).isEqualTo("certificate_untrusted");
                assertThat(d.path("last_status_code").isNull()).isTrue();
                assertThat(d.path("next_attempt_at").isNull()).isFalse();
            });
            // the schedule's next attempt (5 s later) runs and fails the same way: retried, not dropped
            await().atMost(WAIT).untilAsserted(() -> {
                JsonNode d = delivery(app, id(created), deliveryId);
                assertThat(d.path("attempts").asInt()).isEqualTo(2);
                assertThat(d.path("status").asString()).isEqualTo("pending");
                assertThat(d.path("last_error").asString()).isEqualTo("certificate_untrusted");
            });
            assertThat(https.count("/untrusted")).isZero();
            assertThat(webhook(app, id(created)).path("enabled").asBoolean()).isTrue();
        }
    }

    // --- delivery outcomes ---------------------------------------------------------------------

    /** The wait before the next attempt, as the delivery's read shows it after its last attempt. */
    private Duration waitAfterLastAttempt(JsonNode delivery) {
        return Duration.between(Instant.parse(delivery.path("last_attempt_at").asString()),
                Instant.parse(delivery.path("next_attempt_at").asString()));
    }

    @Test
    void tooManyRequestsAndServerErrorsAreRetriedNoSoonerThanRetryAfterWithTheSameWebhookId() {
        TestApp app = newApp();
        JsonNode created = create(app, "/flaky", "[\"*\"]");
        receiver.script("/flaky", new Receiver.Reply(429, Map.of("Retry-After", "1"), Duration.ZERO),
                new Receiver.Reply(503, Map.of("Retry-After", "3600"), Duration.ZERO));
        String deliveryId = queueTest(app, id(created));

        // Retry-After: 1 is shorter than the schedule's first wait (5 s): the schedule wins
        Receiver.Request first = receiver.next("/flaky", WAIT);
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("last_status_code").asInt()).isEqualTo(429);
            assertThat(waitAfterLastAttempt(d)).isEqualTo(Duration.ofSeconds(5));
        });
        clock.advance(Duration.ofSeconds(5));
        Receiver.Request second = receiver.next("/flaky", WAIT);
        // Retry-After: 3600 is longer than the schedule's second wait (5 min): the endpoint's wins
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("last_status_code").asInt()).isEqualTo(503);
            assertThat(d.path("attempts").asInt()).isEqualTo(2);
            assertThat(waitAfterLastAttempt(d)).isEqualTo(Duration.ofHours(1));
        });
        assertThat(receiver.count("/flaky")).isZero();
        clock.advance(Duration.ofHours(1));
        Receiver.Request third = receiver.next("/flaky", WAIT);
        assertThat(List.of(second.header("webhook-id"), third.header("webhook-id"))).containsOnly(first.header("webhook-id"));
        assertThat(first.header("webhook-id")).isEqualTo(deliveryId);
        assertThat(List.of(second.body(), third.body())).containsOnly(first.body());
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("status").asString()).isEqualTo("succeeded");
            assertThat(d.path("attempts").asInt()).isEqualTo(3);
        });
        assertThat(webhook(app, id(created)).path("enabled").asBoolean()).isTrue();
    }

    /** {@code Retry-After: 0} is a minimum, not a shortcut: it must not spend the eight attempts in seconds. */
    @Test
    void retryAfterZeroWaitsForTheSchedule() {
        TestApp app = newApp();
        JsonNode created = create(app, "/busy", "[\"*\"]");
        for (int i = 0; i < 8; i++) receiver.script("/busy", new Receiver.Reply(503, Map.of("Retry-After", "0"), Duration.ZERO));
        String deliveryId = queueTest(app, id(created));
        receiver.next("/busy", WAIT);
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("last_status_code").asInt()).isEqualTo(503);
            assertThat(d.path("status").asString()).isEqualTo("pending");
            assertThat(waitAfterLastAttempt(d)).isEqualTo(Schedule.DELAYS.getFirst());
        });
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> receiver.count("/busy") == 0);
        assertThat(delivery(app, id(created), deliveryId).path("attempts").asInt()).isEqualTo(1);
    }

    @Test
    void anEndpointFailingForLongerThanTheLimitIsDisabledWithTheReasonOnItsRead() {
        TestApp app = newApp();
        JsonNode created = create(app, "/failing", "[\"*\"]");
        for (int i = 0; i < 5; i++) receiver.script("/failing", Receiver.Reply.status(500));
        String deliveryId = queueTest(app, id(created));
        Receiver.Request first = receiver.next("/failing", WAIT);
        await().atMost(WAIT).untilAsserted(() ->
                assertThat(delivery(app, id(created), deliveryId).path("last_error").asString()).isEqualTo("server_error"));
        assertThat(webhook(app, id(created)).path("enabled").asBoolean()).as("one failure disables nothing").isTrue();

        // a day later (PUSH_WEBHOOKS_DISABLE_AFTER) the retry fails too: every attempt has failed that long
        clock.advance(Duration.ofHours(24).plusMinutes(1));
        Receiver.Request retry = receiver.next("/failing", WAIT);
        assertThat(retry.header("webhook-id")).as("a retry after a 500 keeps the webhook-id").isEqualTo(first.header("webhook-id"))
                .isEqualTo(deliveryId);
        assertThat(retry.body()).isEqualTo(first.body());
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode w = webhook(app, id(created));
            assertThat(w.path("enabled").asBoolean()).isFalse();
            assertThat(w.path("disabled_reason").asString()).startsWith("every attempt has failed since");
        });
        JsonNode d = delivery(app, id(created), deliveryId);
        assertThat(d.path("attempts").asInt()).isEqualTo(2);
        assertThat(d.path("status").asString()).as("waits for the endpoint to be enabled again").isEqualTo("pending");
    }

    @Test
    void aTimeoutIsRetriedWithTheSameWebhookId() {
        TestApp app = newApp();
        JsonNode created = create(app, "/slow", "[\"*\"]");
        // the test timeout is 2 s; the first attempt gives up, the schedule retries 5 s later
        receiver.script("/slow", new Receiver.Reply(200, Map.of(), Duration.ofSeconds(4)));
        String deliveryId = queueTest(app, id(created));

        Receiver.Request first = receiver.next("/slow", WAIT);
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("last_error").asString()).isEqualTo("timeout");
            assertThat(d.path("status").asString()).isEqualTo("pending");
            assertThat(d.path("next_attempt_at").isNull()).isFalse();
        });
        Receiver.Request second = receiver.next("/slow", WAIT);
        assertThat(second.header("webhook-id")).isEqualTo(first.header("webhook-id")).isEqualTo(deliveryId);
        await().atMost(WAIT).untilAsserted(() ->
                assertThat(delivery(app, id(created), deliveryId).path("status").asString()).isEqualTo("succeeded"));
    }

    @Test
    void anAttemptLostWithItsInstanceRunsAgainAfterItsLease() {
        TestApp app = newApp();
        JsonNode created = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"" + receiver.url("/lost")
                + "\",\"events\":[\"*\"],\"enabled\":false}").json();
        String deliveryId = queueTest(app, id(created));
        // as a claim leaves it when its instance dies before recording: attempt counted, next attempt
        // pushed past the lease (twice the 2 s timeout plus 30 s)
        jdbc.sql("update webhook_deliveries set attempts = 1, next_attempt_at = now() + interval '34 seconds' where id = :id")
                .param("id", UUID.fromString(deliveryId)).update();
        assertThat(api.patch("/v1/webhooks/" + id(created), app.serverKey(), "{\"enabled\":true}").status()).isEqualTo(200);
        await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(3)).until(() -> receiver.count("/lost") == 0);

        clock.advance(Duration.ofSeconds(35));
        Receiver.Request r = receiver.next("/lost", WAIT);
        assertThat(r.header("webhook-id")).isEqualTo(deliveryId);
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("status").asString()).isEqualTo("succeeded");
            assertThat(d.path("attempts").asInt()).isEqualTo(2);
        });
    }

    @Test
    void goneDisablesTheEndpointWithTheReasonOnItsRead() {
        TestApp app = newApp();
        JsonNode created = create(app, "/gone", "[\"*\"]");
        receiver.script("/gone", Receiver.Reply.status(410));
        String deliveryId = queueTest(app, id(created));
        receiver.next("/gone", WAIT);
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode w = webhook(app, id(created));
            assertThat(w.path("enabled").asBoolean()).isFalse();
            assertThat(w.path("disabled_reason").asString()).contains("410");
        });
        JsonNode d = delivery(app, id(created), deliveryId);
        assertThat(d.path("status").asString()).isEqualTo("failed");
        assertThat(d.path("last_status_code").asInt()).isEqualTo(410);

        // re-enabling clears the reason and delivers again
        TestApi.Response enabled = api.patch("/v1/webhooks/" + id(created), app.serverKey(), "{\"enabled\":true}");
        assertThat(enabled.json().path("disabled_reason").isNull()).isTrue();
        queueTest(app, id(created));
        receiver.next("/gone", WAIT);
    }

    @Test
    void aRedirectIsNotFollowed() {
        TestApp app = newApp();
        JsonNode created = create(app, "/moved", "[\"*\"]");
        receiver.script("/moved", new Receiver.Reply(307, Map.of("Location", receiver.url("/elsewhere")), Duration.ZERO));
        String deliveryId = queueTest(app, id(created));
        receiver.next("/moved", WAIT);
        await().atMost(WAIT).untilAsserted(() -> {
            JsonNode d = delivery(app, id(created), deliveryId);
            assertThat(d.path("last_status_code").asInt()).isEqualTo(307);
            assertThat(d.path("last_error").asString()).isEqualTo("redirect_not_followed");
            assertThat(d.path("status").asString()).isEqualTo("pending");
        });
        assertThat(receiver.count("/elsewhere")).isZero();
    }

    @Test
    void aDeadEndpointDoesNotDelayAnother() {
        TestApp app = newApp();
        JsonNode dead = create(app, "/dead", "[\"*\"]");
        JsonNode alive = create(app, "/alive", "[\"*\"]");
        Receiver.Reply hang = new Receiver.Reply(200, Map.of(), Duration.ofSeconds(30));
        for (int i = 0; i < 20; i++) receiver.script("/dead", hang);
        for (int i = 0; i < 20; i++) queueTest(app, id(dead));
        receiver.next("/dead", WAIT); // the dead endpoint holds its slots now

        long started = System.nanoTime();
        for (int i = 0; i < 5; i++) queueTest(app, id(alive));
        for (int i = 0; i < 5; i++) receiver.next("/alive", WAIT);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(2));
        // per-endpoint concurrency: the dead endpoint never had more than its slots in flight
        assertThat(receiver.count("/dead")).isLessThanOrEqualTo(8 - 1);
    }

    // --- events from real actions --------------------------------------------------------------

    @Test
    void realActionsArriveAsEvents() throws Exception {
        TestApp app = newApp();
        JsonNode created = create(app, "/events", "[\"notification.created\",\"notification.queued\",\"device.registered\"]");
        String secret = created.path("secret").asString();

        byte[] token = new byte[32];
        ThreadLocalRandom.current().nextBytes(token);
        TestApi.Response device = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + HexFormat.of().formatHex(token) + "\"}");
        assertThat(device.status()).as(device.toString()).isEqualTo(201);
        String deviceId = device.json().path("device_id").asString();

        TestApi.Response sent = api.send(api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(
                        "{\"title\":\"Hi\",\"body\":\"There\",\"target\":{\"type\":\"device\",\"device_id\":\"" + deviceId + "\"}}")));
        assertThat(sent.status()).as(sent.toString()).isEqualTo(202);
        String notificationId = sent.json().path("notification_id").asString();

        Map<String, JsonNode> byType = new HashMap<>();
        while (byType.size() < 3) {
            Receiver.Request r = receiver.next("/events", WAIT);
            verify(secret, r);
            JsonNode body = JSON.readTree(r.body());
            byType.put(body.path("type").asString(), body);
        }
        assertThat(byType).containsOnlyKeys("device.registered", "notification.created", "notification.queued");
        assertThat(byType.get("device.registered").path("data").path("device_id").asString()).isEqualTo(deviceId);
        assertThat(byType.get("device.registered").path("data").path("platform").asString()).isEqualTo("ios");
        assertThat(byType.get("notification.created").path("data").path("notification_id").asString()).isEqualTo(notificationId);
        assertThat(byType.get("notification.queued").path("data").path("notification_id").asString()).isEqualTo(notificationId);

        // a re-registration of the same token is no new device and no event
        api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + HexFormat.of().formatHex(token) + "\"}");
        queueTest(app, id(created));
        Receiver.Request next = receiver.next("/events", WAIT);
        assertThat(JSON.readTree(next.body()).path("type").asString()).isEqualTo("webhook.test");
    }

    @Test
    void aCompletedExportArrivesAsAnEvent() throws Exception {
        TestApp app = newApp();
        String secret = create(app, "/exports", "[\"export.completed\"]").path("secret").asString();
        TestApi.Response export = api.post("/v1/exports", app.serverKey(), "{\"type\":\"audience\"}");
        assertThat(export.status()).as(export.toString()).isEqualTo(202);

        Receiver.Request r = receiver.next("/exports", WAIT);
        verify(secret, r);
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.path("type").asString()).isEqualTo("export.completed");
        assertThat(body.path("data").path("export_id").asString()).isEqualTo(export.json().path("export_id").asString());
        assertThat(body.path("data").path("type").asString()).isEqualTo("audience");
        assertThat(body.path("data").path("rows").asLong()).isZero();
    }

    @Test
    void everyEngagementTypeArrivesAsItsOwnKind() throws Exception {
        TestApp app = newApp();
        List<String> types = java.util.Arrays.stream(dev.pushservice.events.EventType.values())
                .map(dev.pushservice.events.EventType::value).toList();
        // each event type is a subscribable kind (an unknown one would be a 422)
        create(app, "/engagement", types.stream().map(t -> "\"event." + t + "\"").collect(java.util.stream.Collectors.joining(",", "[", "]")));
        for (String type : types) {
            String name = type.equals("custom") || type.equals("outcome") ? ",\"event_name\":\"" + type + "-1\"" : "";
            TestApi.Response r = api.post("/v1/events", app.publicKey(), "{\"event_type\":\"" + type + "\"" + name + "}");
            assertThat(r.status()).as(r.toString()).isEqualTo(202);
        }
        Map<String, JsonNode> byType = new HashMap<>();
        while (byType.size() < types.size()) {
            JsonNode body = JSON.readTree(receiver.next("/engagement", WAIT).body());
            byType.put(body.path("type").asString(), body.path("data"));
        }
        assertThat(byType).containsOnlyKeys(types.stream().map(t -> "event." + t).toList());
        assertThat(byType.get("event.custom").path("event_name").asString()).isEqualTo("custom-1");
        assertThat(byType.get("event.clicked").path("event_type").asString()).isEqualTo("clicked");
    }

    @Test
    void aChangedUrlReceivesTheNextDeliveries() {
        TestApp app = newApp();
        String id = id(create(app, "/before", "[\"webhook.test\"]"));
        TestApi.Response patched = api.patch("/v1/webhooks/" + id, app.serverKey(), "{\"url\":\"" + receiver.url("/after") + "\"}");
        assertThat(patched.status()).as(patched.toString()).isEqualTo(200);
        assertThat(patched.json().path("url").asString()).isEqualTo(receiver.url("/after"));
        String deliveryId = queueTest(app, id);
        assertThat(receiver.next("/after", WAIT).header("webhook-id")).isEqualTo(deliveryId);
        assertThat(receiver.count("/before")).isZero();
        assertError(api.patch("/v1/webhooks/" + id, app.serverKey(), "{\"url\":\"ftp://example.com/\"}"), 422, "validation_failed");
    }

    @Test
    void deviceDisabledUserDeletedAndEngagementArriveAsEvents() throws Exception {
        TestApp app = newApp();
        create(app, "/facts", "[\"device.disabled\",\"user.deleted\",\"event.opened\"]");
        String unsubscribed = id(create(app, "/quiet", "[\"event.clicked\"]"));

        TestApi.Response d1 = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\"}");
        String first = d1.json().path("device_id").asString();
        TestApi.Response d2 = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"android\",\"push_token\":\"" + TestTokens.fcm() + "\",\"external_user_id\":\"ada\"}");
        assertThat(d2.status()).as(d2.toString()).isEqualTo(201);

        assertThat(api.post("/v1/events", app.publicKey(), "{\"event_type\":\"opened\",\"device_id\":\"" + first + "\"}").status())
                .isEqualTo(202);
        assertThat(api.delete("/v1/devices/" + first, app.serverKey()).status()).isEqualTo(200);
        assertThat(api.delete("/v1/users/ada", app.serverKey()).status()).isEqualTo(200);

        Map<String, JsonNode> byType = new HashMap<>();
        while (byType.size() < 3) {
            JsonNode body = JSON.readTree(receiver.next("/facts", WAIT).body());
            byType.put(body.path("type").asString(), body);
        }
        assertThat(byType).containsOnlyKeys("device.disabled", "user.deleted", "event.opened");
        assertThat(byType.get("device.disabled").path("data").path("device_id").asString()).isEqualTo(first);
        assertThat(byType.get("user.deleted").path("data").path("external_user_id").asString()).isEqualTo("ada");
        assertThat(byType.get("user.deleted").path("data").path("devices_disabled").asInt()).isEqualTo(1);
        assertThat(byType.get("event.opened").path("data").path("device_id").asString()).isEqualTo(first);
        assertThat(byType.get("event.opened").path("data").path("event_type").asString()).isEqualTo("opened");
        assertThat(receiver.count("/quiet")).isZero();
        assertThat(api.get("/v1/webhooks/" + unsubscribed + "/deliveries", app.serverKey()).json().path("data")).isEmpty();
    }
}
