package dev.pushservice.notifications;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.delivery.webpush.LocalWebPushReceiver;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestNames;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 26, part 2, end to end through the API of an application running with
 * {@code PUSH_WEBPUSH_ALLOW_INSECURE_ENDPOINTS} at its default (off): a browser subscription
 * registered with the public key, whose {@code https} endpoint names a host that looks public but
 * resolves to 127.0.0.1 ({@link TestNames}: no DNS server, no private range), passes registration and
 * is refused when the push is sent: the recipient ends {@code failed} with
 * {@code endpoint_address_refused} after one attempt, the device is invalidated and left out of later
 * sends, and the push service listening on loopback never sees a connection.
 */
class WebPushAddressGuardTests extends ApiTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    private LocalWebPushReceiver receiver;

    @BeforeEach
    void startReceiver() {
        receiver = LocalWebPushReceiver.start();
    }

    @AfterEach
    void stopReceiver() {
        receiver.close();
    }

    @Test
    void aNameResolvingToLoopbackIsRefusedWhenSendingAndItsDeviceInvalidated() {
        TestApp app = newApp();
        String name = "push-" + UUID.randomUUID() + ".example.test";
        TestNames.point(name, "127.0.0.1");
        String subscription = receiver.subscribeTls().json().replace("https://127.0.0.1:", "https://" + name + ":");
        TestApi.Response registered = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"web\",\"push_token\":" + quoted(subscription) + "}");
        assertThat(registered.status()).as("a public-looking name passes registration: " + registered).isEqualTo(201);
        String deviceId = registered.json().path("device_id").asString();

        String first = send(app);
        JsonNode summary = finished(app, first);
        assertThat(summary.path("failed_count").asLong()).isEqualTo(1);
        JsonNode recipient = recipients(app, first);
        assertThat(recipient.size()).isEqualTo(1);
        assertThat(recipient.get(0).path("device_id").asString()).isEqualTo(deviceId);
        assertThat(recipient.get(0).path("status").asString()).isEqualTo("failed");
        assertThat(recipient.get(0).path("last_error").asString()).isEqualTo("endpoint_address_refused");
        assertThat(recipient.get(0).path("attempts").asInt()).as("never retried").isEqualTo(1);

        await().atMost(WAIT).untilAsserted(() -> {
            TestApi.Response device = api.get("/v1/devices/" + deviceId, app.serverKey());
            assertThat(device.status()).isEqualTo(200);
            assertThat(device.json().path("invalidated_at").isNull()).as("invalidated: " + device).isFalse();
        });
        String second = send(app);
        finished(app, second);
        assertThat(recipients(app, second)).as("an invalidated device is never sent to again").isEmpty();

        assertThat(receiver.connectionCount()).as("connections that reached the loopback push service").isZero();
        assertThat(receiver.requestCount()).isZero();
    }

    private String send(TestApp app) {
        TestApi.Response r = api.send(api.request("/v1/notifications", app.serverKey()).header("Content-Type", "application/json")
                .header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString("{\"title\":\"a\",\"body\":\"b\",\"target\":{\"type\":\"all\"}}")));
        assertThat(r.status()).as(r.toString()).isEqualTo(202);
        return r.json().path("notification_id").asString();
    }

    private JsonNode finished(TestApp app, String id) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() ->
                List.of("completed", "failed", "cancelled").contains(summary(app, id).path("status").asString()));
        return summary(app, id);
    }

    private JsonNode summary(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id, app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json();
    }

    private JsonNode recipients(TestApp app, String id) {
        TestApi.Response r = api.get("/v1/notifications/" + id + "/recipients?limit=100", app.serverKey());
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        return r.json().path("data");
    }

    private static String quoted(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
