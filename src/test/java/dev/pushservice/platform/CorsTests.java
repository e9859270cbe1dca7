package dev.pushservice.platform;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import dev.pushservice.support.TestTokens;
import java.net.http.HttpRequest;
import org.junit.jupiter.api.Test;

/**
 * A web page calling the API from the browser (docs/api-decisions.md "CORS"): the preflight a
 * browser sends before a JSON request with a key, and the headers on the answers it may read.
 */
class CorsTests extends ApiTest {

    static final String SITE = "https://shop.example";

    /** The preflight a browser sends before {@code POST path} with a key and a JSON body, from {@code origin}. */
    static TestApi.Response preflight(TestApi api, String path, String origin) {
        return api.send(api.request(path, null).header("Origin", origin)
                .header("Access-Control-Request-Method", "POST")
                .header("Access-Control-Request-Headers", "authorization, content-type")
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()));
    }

    static TestApi.Response register(TestApi api, String key, String origin) {
        return api.send(api.request("/v1/devices/register", key).header("Origin", origin)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}")));
    }

    @Test
    void aPreflightIsAnsweredWithoutAKeyAndSpendsNoRequestOfTheLimit() {
        TestApi.Response r = preflight(api, "/v1/devices/register", SITE);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.header("Access-Control-Allow-Origin")).contains("*");
        assertThat(r.header("Access-Control-Allow-Methods").orElseThrow()).contains("POST").contains("DELETE");
        assertThat(r.header("Access-Control-Allow-Headers").orElseThrow().toLowerCase())
                .contains("authorization").contains("content-type");
        assertThat(r.header("Access-Control-Max-Age")).contains("3600");
        assertThat(r.header("Access-Control-Allow-Credentials")).as("keys are never cookies").isEmpty();
        assertThat(r.header("RateLimit")).as("answered before the key check and the limiter").isEmpty();
    }

    @Test
    void aCrossOriginCallCarriesTheHeadersThePageMayRead() {
        TestApp app = newApp();
        TestApi.Response r = register(api, app.publicKey(), SITE);
        assertThat(r.status()).as(r.toString()).isIn(200, 201);
        assertThat(r.header("Access-Control-Allow-Origin")).contains("*");
        assertThat(r.header("Access-Control-Expose-Headers").orElseThrow())
                .contains("X-Request-ID").contains("RateLimit-Policy").contains("Retry-After");
        assertThat(r.header("RateLimit")).isPresent();
    }

    @Test
    void anErrorOfACrossOriginCallIsReadableToo() {
        TestApi.Response r = register(api, null, SITE);
        assertError(r, 401, "unauthorized");
        assertThat(r.header("Access-Control-Allow-Origin")).contains("*");
    }

    @Test
    void aPreflightForAMethodTheApiDoesNotAllowGetsNoCorsHeaders() {
        TestApi.Response r = api.send(api.request("/v1/devices/register", null).header("Origin", SITE)
                .header("Access-Control-Request-Method", "PUT")
                .method("OPTIONS", HttpRequest.BodyPublishers.noBody()));
        assertError(r, 401, "unauthorized");
        assertThat(r.header("Access-Control-Allow-Origin")).isEmpty();
    }
}
