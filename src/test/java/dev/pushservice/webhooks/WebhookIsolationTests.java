package dev.pushservice.webhooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.eatthepath.pushy.apns.server.PushNotificationHandler;
import com.eatthepath.pushy.apns.server.UnregisteredDeviceTokenException;
import com.zaxxer.hikari.HikariDataSource;
import dev.pushservice.delivery.apns.ApnsTestPeer;
import dev.pushservice.delivery.apns.TestCertificates;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Webhooks beside real notification delivery (Pushy's MockApnsServer on loopback): endpoints that
 * never answer hold many attempts without delaying a transactional notification, the API or another
 * endpoint; and the notification and device facts that delivery produces arrive as events.
 */
class WebhookIsolationTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final ApnsTestPeer APNS;
    private static final Path CA;
    /** When APNs accepted a push, by device token ({@link System#nanoTime()}). */
    private static final Map<String, Long> APNS_ARRIVALS = new ConcurrentHashMap<>();
    /** Tokens the APNs peer refuses as unregistered. */
    private static final Set<String> DEAD_TOKENS = ConcurrentHashMap.newKeySet();

    static {
        try {
            APNS = ApnsTestPeer.startAcceptingSilently();
            APNS.answer((PushNotificationHandler) (headers, payload) -> {
                String token = ApnsTestPeer.deviceToken(headers);
                if (DEAD_TOKENS.contains(token)) throw new UnregisteredDeviceTokenException(Instant.now());
                APNS_ARRIVALS.putIfAbsent(token, System.nanoTime());
            });
            CA = ApnsTestPeer.writeCa(Files.createTempDirectory("webhook-isolation-tests"));
        } catch (Exception e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @DynamicPropertySource
    static void peers(DynamicPropertyRegistry registry) {
        APNS.pointApplicationAt(registry, CA);
        // an attempt on a dead endpoint waits this long: anything that waited on one would take 30 s
        registry.add("push.webhooks.timeout", () -> "30s");
    }

    @Autowired
    WebhookProperties webhooks;

    @Autowired
    WebhookDispatcher dispatcher;

    /** The API's pool (delivery has its own, {@code DeliveryDatabase}). */
    @Autowired
    HikariDataSource apiPool;

    // ---- helpers ---------------------------------------------------------------------------------

    private void apnsCredentials(TestApp app) throws Exception {
        String pem = TestCertificates.pkcs8Pem(TestCertificates.ec("secp256r1").getPrivate());
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), "{\"apns\":{\"bundle_id\":\"dev.pushservice.test\","
                + "\"environment\":\"sandbox\",\"token\":{\"key_id\":\"LOCAL12345\",\"team_id\":\"LOCALTEAM1\",\"signing_key\":"
                + JSON.writeValueAsString(pem) + "}}}");
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
    }

    private String iosDevice(TestApp app, String token) {
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + token + "\"}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("device_id").asString();
    }

    private TestApi.Response send(TestApp app, String body) {
        return api.send(api.request("/v1/notifications", app.serverKey())
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    private String webhook(TestApp app, String url, String events) {
        TestApi.Response r = api.post("/v1/webhooks", app.serverKey(), "{\"url\":\"" + url + "\",\"events\":" + events + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        return r.json().path("webhook_id").asString();
    }

    private void queueTest(TestApp app, String webhookId) {
        TestApi.Response r = api.send(api.request("/v1/webhooks/" + webhookId + "/test", app.serverKey())
                .POST(HttpRequest.BodyPublishers.noBody()));
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
    }

    private String status(TestApp app, String notificationId) {
        return api.get("/v1/notifications/" + notificationId, app.serverKey()).json().path("status").asString();
    }

    // ---- tests -----------------------------------------------------------------------------------

    @Test
    void receiversThatNeverAnswerDoNotDelayATransactionalNotificationTheApiOrAnotherEndpoint() throws Exception {
        TestApp app = newApp();
        apnsCredentials(app);
        String token = TestTokens.apns();
        String deviceId = iosDevice(app, token);
        int poolSize = apiPool.getMaximumPoolSize();

        try (BlackHole hole = new BlackHole(); Receiver alive = new Receiver()) {
            // ten dead endpoints, half hanging after the request, half in the TLS handshake, all subscribed
            // to everything (the notification's own facts queue for them too), 30 deliveries each
            List<String> dead = new ArrayList<>();
            for (int i = 0; i < 10; i++) dead.add(webhook(app, hole.url(i % 2 == 0 ? "http" : "https", "/dead-" + i), "[\"*\"]"));
            for (int round = 0; round < 30; round++) for (String id : dead) queueTest(app, id);

            // this instance holds more hanging attempts than the API pool has connections: attempts hold none
            await().atMost(WAIT).until(() -> dispatcher.inFlight() > poolSize);
            assertThat(dispatcher.inFlight()).isLessThanOrEqualTo(webhooks.maxInFlight());
            int busiest = 0;
            for (int i = 0; i < 20; i++) {
                busiest = Math.max(busiest, apiPool.getHikariPoolMXBean().getActiveConnections());
                Thread.sleep(25);
            }
            assertThat(busiest).as("API pool connections in use while %s webhook attempts hang", dispatcher.inFlight())
                    .isLessThanOrEqualTo(3);
            int hanging = dispatcher.inFlight();

            // a transactional notification: accepted by the API and delivered to APNs long before any
            // hanging attempt could have ended (they wait 30 s); bound: a third of the webhook timeout
            Duration bound = webhooks.timeout().dividedBy(3);
            long started = System.nanoTime();
            TestApi.Response sent = send(app, "{\"title\":\"code\",\"body\":\"123456\",\"priority\":\"transactional\","
                    + "\"target\":{\"type\":\"device\",\"device_id\":\"" + deviceId + "\"}}");
            assertThat(sent.status()).as(sent.toString()).isEqualTo(202);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).as("the API answered").isLessThan(bound);
            await().atMost(bound).pollInterval(Duration.ofMillis(20)).until(() -> APNS_ARRIVALS.containsKey(token));
            assertThat(Duration.ofNanos(APNS_ARRIVALS.get(token) - started)).isLessThan(bound);
            String notificationId = sent.json().path("notification_id").asString();
            await().atMost(bound).until(() -> status(app, notificationId).equals("completed"));

            // another endpoint of the same app is delivered to meanwhile
            String aliveId = webhook(app, alive.url("/alive"), "[\"webhook.test\"]");
            long queued = System.nanoTime();
            queueTest(app, aliveId);
            alive.next("/alive", bound);
            assertThat(Duration.ofNanos(System.nanoTime() - queued)).isLessThan(bound);

            // the dead endpoints were still hanging all along (nothing above waited for them to give up)
            assertThat(hole.accepted()).isGreaterThanOrEqualTo(hanging);
            assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(webhooks.timeout());
            for (String id : dead) assertThat(api.delete("/v1/webhooks/" + id, app.serverKey()).status()).isEqualTo(200);
        }
    }

    @Test
    void notificationOutcomesAndInvalidatedDevicesArriveAsEvents() throws Exception {
        TestApp app = newApp();
        apnsCredentials(app);
        String good = TestTokens.apns();
        String gone = TestTokens.apns();
        DEAD_TOKENS.add(gone);
        String goodDevice = iosDevice(app, good);
        String goneDevice = iosDevice(app, gone);
        try (Receiver receiver = new Receiver()) {
            webhook(app, receiver.url("/outcomes"), "[\"notification.processing\",\"notification.completed\","
                    + "\"notification.failed\",\"notification.cancelled\",\"device.invalidated\"]");

            String completed = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"device\",\"device_id\":\""
                    + goodDevice + "\"}}").json().path("notification_id").asString();
            String failed = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"device\",\"device_id\":\""
                    + goneDevice + "\"}}").json().path("notification_id").asString();
            String later = Instant.now().plus(Duration.ofHours(1)).toString();
            String cancelled = send(app, "{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"},\"scheduled_at\":\""
                    + later + "\"}").json().path("notification_id").asString();
            assertThat(api.post("/v1/notifications/" + cancelled + "/cancel", app.serverKey(), "").status()).isEqualTo(200);

            Map<String, List<JsonNode>> byType = new HashMap<>();
            await().atMost(WAIT).until(() -> {
                Receiver.Request r = receiver.next("/outcomes", WAIT);
                JsonNode body = JSON.readTree(r.body());
                byType.computeIfAbsent(body.path("type").asString(), k -> new ArrayList<>()).add(body.path("data"));
                return byType.keySet().containsAll(List.of("notification.processing", "notification.completed",
                        "notification.failed", "notification.cancelled", "device.invalidated"))
                        && byType.get("notification.processing").size() == 2;
            });
            assertThat(byType.get("notification.processing")).extracting(d -> d.path("notification_id").asString())
                    .containsExactlyInAnyOrder(completed, failed);
            JsonNode done = byType.get("notification.completed").getFirst();
            assertThat(done.path("notification_id").asString()).isEqualTo(completed);
            assertThat(done.path("accepted").asInt()).isEqualTo(1);
            JsonNode fail = byType.get("notification.failed").getFirst();
            assertThat(fail.path("notification_id").asString()).isEqualTo(failed);
            assertThat(fail.path("failed").asInt()).isEqualTo(1);
            assertThat(byType.get("notification.cancelled").getFirst().path("notification_id").asString()).isEqualTo(cancelled);
            JsonNode invalidated = byType.get("device.invalidated").getFirst();
            assertThat(invalidated.path("device_id").asString()).isEqualTo(goneDevice);
            assertThat(invalidated.path("reason").asString()).isNotBlank();
            assertThat(byType.values().stream().mapToInt(List::size).sum()).isEqualTo(6);
        } finally {
            DEAD_TOKENS.remove(gone);
        }
    }
}
