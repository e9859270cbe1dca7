package dev.pushservice.devices;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/** With the local-testing setting on, browsers subscribed to a local receiver (http, loopback) can register. */
@TestPropertySource(properties = "push.webpush.allow-insecure-endpoints=true")
class InsecureWebEndpointsTests extends ApiTest {

    @Test
    void localHttpSubscriptionsRegisterWhenAllowed() throws Exception {
        TestApp app = newApp();
        String subscription = TestTokens.webSubscription("http://127.0.0.1:9999/push/abc");
        TestApi.Response r = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"web\",\"push_token\":" + DeviceRegistrationTests.json(subscription) + "}");
        assertThat(r.status()).as(r.toString()).isEqualTo(201);
        TestApi.Response notJson = api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"web\",\"push_token\":\"{broken\"}");
        assertThat(notJson.status()).isEqualTo(422);
    }
}
