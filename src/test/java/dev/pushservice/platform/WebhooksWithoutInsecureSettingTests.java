package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.apps.TenantService;
import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.support.LocalHttpServer;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestDatabase;
import dev.pushservice.support.TestNames;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;

/**
 * End to end through the API of an instance running with {@code PUSH_WEBHOOKS_ALLOW_INSECURE} at its
 * default (off), on a database of its own so that no test application (those allow loopback) can
 * claim its deliveries: URLs naming 127.0.0.1 or ::1 are refused at creation, and a name that passed
 * creation but resolves to 127.0.0.1 or ::1 when the delivery is attempted is refused there, with
 * {@code address_refused} on the delivery's read. The HTTPS receiver on loopback never sees a request.
 */
class WebhooksWithoutInsecureSettingTests {

    private final AtomicInteger received = new AtomicInteger();
    private LocalHttpServer receiver;

    @BeforeEach
    void startReceiver() {
        receiver = LocalHttpServer.builder().tls().http1Only().start(request -> {
            received.incrementAndGet();
            return Mono.just(new LocalHttpServer.Response(200, Map.of(), ""));
        });
    }

    @AfterEach
    void stopReceiver() {
        receiver.close();
    }

    @Test
    void loopbackTargetsAreRefusedAtCreationAndWhenTheDeliveryIsAttempted() {
        try (AppInstance instance = AppInstance.with()
                .set("push.database-url", TestDatabase.asDatabaseUrlSetting(TestDatabase.newDatabase()))
                .start()) {
            TenantService tenants = instance.bean(TenantService.class);
            Tenants.Organisation org = tenants.createOrganisation("webhook safety");
            Tenants.App app = tenants.createApp(org.id(), "safety app", "UTC");
            String key = tenants.issueKey(app.id(), KeyKind.SERVER, "server", EnumSet.allOf(Scope.class), null).rawKey();
            TestApi api = instance.api;
            int port = receiver.port();

            for (String url : new String[] {"https://127.0.0.1:" + port + "/hook", "https://[::1]:" + port + "/hook",
                    "https://localhost:" + port + "/hook", "http://127.0.0.1:" + port + "/hook"}) {
                TestApi.Response refused = create(api, key, url);
                assertThat(refused.status()).as(url + " " + refused).isEqualTo(422);
                assertThat(refused.json().path("error").path("details").get(0).path("field").asString()).isEqualTo("url");
            }
            assertThat(api.get("/v1/webhooks", key).json().path("data")).as("nothing created").isEmpty();

            TestNames.point("e2e-rebound-v4.webhook.test", "127.0.0.1");
            TestNames.point("e2e-rebound-v6.webhook.test", "::1");
            for (String name : new String[] {"e2e-rebound-v4.webhook.test", "e2e-rebound-v6.webhook.test"}) {
                TestApi.Response created = create(api, key, "https://" + name + ":" + port + "/hook");
                assertThat(created.status()).as("a public-looking name passes creation: " + created).isEqualTo(201);
                String webhookId = created.json().path("webhook_id").asString();
                TestApi.Response queued = api.send(api.request("/v1/webhooks/" + webhookId + "/test", key)
                        .POST(HttpRequest.BodyPublishers.noBody()));
                assertThat(queued.status()).as(queued.toString()).isEqualTo(202);
                String deliveryId = queued.json().path("delivery_id").asString();
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                    JsonNode delivery = delivery(api, key, webhookId, deliveryId);
                    assertThat(delivery.path("attempts").asInt()).as(name).isGreaterThanOrEqualTo(1);
                    assertThat(delivery.path("last_error").asString()).as(name).isEqualTo("address_refused");
                });
            }
            assertThat(received.get()).as("requests that reached the loopback receiver").isZero();
        }
    }

    private static TestApi.Response create(TestApi api, String key, String url) {
        return api.post("/v1/webhooks", key, "{\"url\":\"" + url + "\",\"description\":\"safety\",\"events\":[\"*\"]}");
    }

    private static JsonNode delivery(TestApi api, String key, String webhookId, String deliveryId) {
        TestApi.Response r = api.get("/v1/webhooks/" + webhookId + "/deliveries", key);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        for (JsonNode d : r.json().path("data")) if (d.path("delivery_id").asString().equals(deliveryId)) return d;
        throw new AssertionError("delivery " + deliveryId + " not listed");
    }
}
