package dev.pushservice.devices;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.delivery.webpush.VapidKeys;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * An import's endpoints meet the registration's rules with the service's default settings (no
 * {@code allow-insecure-endpoints}): the SSRF guard's refused hosts and http refuse the whole import.
 */
class WebPushImportGuardTests extends ApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Autowired
    JdbcClient jdbc;

    @Test
    void endpointsToInternalAddressesRefuseTheImport() {
        TestApp app = newApp();
        VapidKeys previous = VapidKeys.generate();
        List<String> refused = List.of("http://push.example.com/x", "https://127.0.0.1/x", "https://169.254.169.254/latest/meta-data/",
                "https://10.0.0.8/x", "https://localhost/x", "https://[::1]/x", "https://0x7f000001/x");
        for (String endpoint : refused) {
            ObjectNode body = JSON.createObjectNode();
            body.put("vapid_public_key", previous.publicKeyBase64Url());
            body.put("vapid_private_key", previous.privateKeyBase64Url());
            var rows = body.putArray("subscriptions");
            rows.add(row(TestTokens.webSubscription("https://push.example.com/ok")));
            rows.add(row(TestTokens.webSubscription(endpoint)));

            TestApi.Response r = api.post("/v1/app/webpush/imports", app.serverKey(), body.toString());

            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(endpoint)
                    .containsExactly("subscriptions[1].endpoint");
            assertThat(r.body()).as("the endpoint is never echoed").doesNotContain(endpoint.substring(8));
        }
        assertThat(jdbc.sql("select count(*) from devices where app_id = :app").param("app", app.appId()).query(Long.class).single())
                .isZero();
        assertThat(jdbc.sql("select count(*) from webpush_imported_keys where app_id = :app").param("app", app.appId())
                .query(Long.class).single()).isZero();

        // the same import with only the public endpoint goes through
        ObjectNode body = JSON.createObjectNode();
        body.put("vapid_public_key", previous.publicKeyBase64Url());
        body.put("vapid_private_key", previous.privateKeyBase64Url());
        body.putArray("subscriptions").add(row(TestTokens.webSubscription("https://push.example.com/ok")));
        TestApi.Response ok = api.post("/v1/app/webpush/imports", app.serverKey(), body.toString());
        assertThat(ok.status()).as(ok.toString()).isEqualTo(200);
        assertThat(ok.json().path("created").asInt()).isEqualTo(1);
    }

    private static ObjectNode row(String subscription) {
        JsonNode s = JSON.readTree(subscription);
        ObjectNode row = JSON.createObjectNode();
        row.put("endpoint", s.path("endpoint").asString());
        row.put("p256dh", s.path("keys").path("p256dh").asString());
        row.put("auth", s.path("keys").path("auth").asString());
        return row;
    }
}
