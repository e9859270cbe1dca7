package dev.pushservice.platform;

import static dev.pushservice.platform.CorsTests.SITE;
import static dev.pushservice.platform.CorsTests.preflight;
import static dev.pushservice.platform.CorsTests.register;
import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/** {@code PUSH_CORS_ALLOWED_ORIGINS} set to two origins (see {@link CorsTests} for the default, any origin). */
@TestPropertySource(properties = "push.cors.allowed-origins=" + SITE + ", https://admin.example")
class CorsRestrictedTests extends ApiTest {

    @Test
    void aListedOriginIsAnsweredAsItself() {
        TestApi.Response r = preflight(api, "/v1/events", SITE);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.header("Access-Control-Allow-Origin")).contains(SITE);
        assertThat(register(api, newApp().publicKey(), "https://admin.example").header("Access-Control-Allow-Origin"))
                .contains("https://admin.example");
    }

    @Test
    void anotherOriginGetsNoCorsHeadersAndItsPreflightEndsAtTheKeyCheck() {
        TestApi.Response r = preflight(api, "/v1/events", "https://evil.example");
        assertError(r, 401, "unauthorized");
        assertThat(r.header("Access-Control-Allow-Origin")).isEmpty();
        TestApi.Response call = register(api, newApp().publicKey(), "https://evil.example");
        assertThat(call.status()).as("the service answers; the browser withholds it from the page").isIn(200, 201);
        assertThat(call.header("Access-Control-Allow-Origin")).isEmpty();
    }
}
