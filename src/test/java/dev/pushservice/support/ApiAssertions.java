package dev.pushservice.support;

import static org.assertj.core.api.Assertions.assertThat;

import tools.jackson.databind.JsonNode;

/** Assertions every API test shares. */
public final class ApiAssertions {

    private ApiAssertions() {
    }

    /** The response is an error in the spec's shape with this status and code, tied to its request id. */
    public static void assertError(TestApi.Response r, int status, String code) {
        assertThat(r.status()).as(r.toString()).isEqualTo(status);
        JsonNode body = r.json();
        assertThat(body.path("error").path("code").asString()).as(r.toString()).isEqualTo(code);
        assertThat(body.path("error").path("message").asString()).isNotBlank();
        assertThat(body.path("error").path("details").isArray()).isTrue();
        assertThat(body.path("request_id").asString()).isEqualTo(r.header("X-Request-ID").orElseThrow());
    }
}
