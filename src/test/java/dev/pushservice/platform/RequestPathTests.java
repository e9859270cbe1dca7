package dev.pushservice.platform;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class RequestPathTests extends ApiTest {

    @Test
    void missingKeyIsUnauthorized() {
        TestApi.Response r = api.get("/v1/app/settings", null);
        assertError(r, 401, "unauthorized");
        assertThat(r.header("WWW-Authenticate")).contains("Bearer");
    }

    @Test
    void malformedAuthorizationHeaderIsUnauthorized() {
        TestApi.Response basic = api.send(api.request("/v1/app/settings", null).header("Authorization", "Basic abc").GET());
        assertError(basic, 401, "unauthorized");
        TestApi.Response empty = api.send(api.request("/v1/app/settings", null).header("Authorization", "Bearer ").GET());
        assertError(empty, 401, "unauthorized");
    }

    @Test
    void unknownKeyIsUnauthorized() {
        assertError(api.get("/v1/app/settings", "ps_live_" + "x".repeat(43)), 401, "unauthorized");
    }

    @Test
    void revokedKeyIsUnauthorized() {
        TestApp app = newApp();
        assertThat(api.get("/v1/app/settings", app.serverKey()).status()).isEqualTo(200);
        UUID keyId = tenants.keys(app.appId()).stream().filter(k -> k.kind().equals("server")).findFirst().orElseThrow().id();
        tenants.revokeKey(keyId);
        TestApi.Response r = api.get("/v1/app/settings", app.serverKey());
        assertError(r, 401, "unauthorized");
        assertThat(r.json().path("error").path("message").asString()).contains("revoked");
    }

    @Test
    void expiredKeyIsUnauthorized() throws Exception {
        TestApp app = newApp();
        String key = tenants.issueKey(app.appId(), dev.pushservice.platform.auth.KeyKind.SERVER, "short",
                java.util.Set.of(), Instant.now().plusSeconds(2)).rawKey(); // long enough for the first request on a loaded machine
        assertThat(api.get("/v1/app/settings", key).status()).isEqualTo(200);
        TestApi.Response r = await().atMost(Duration.ofSeconds(10))
                .until(() -> api.get("/v1/app/settings", key), response -> response.status() != 200);
        assertError(r, 401, "unauthorized");
        assertThat(r.json().path("error").path("message").asString()).contains("expired");
    }

    @Test
    void publicKeyOnNotificationRouteIsForbidden() {
        TestApp app = newApp();
        assertError(api.get("/v1/app/settings", app.publicKey()), 403, "forbidden");
        assertError(api.patch("/v1/app/settings", app.publicKey(), "{\"name\":\"x\"}"), 403, "forbidden");
    }

    @Test
    void keyWithoutScopeIsForbidden() {
        TestApp app = newApp();
        String readOnly = serverKey(app, dev.pushservice.platform.auth.Scope.NOTIFICATIONS_READ);
        assertThat(api.get("/v1/app/settings", readOnly).status()).isEqualTo(200);
        TestApi.Response r = api.patch("/v1/app/settings", readOnly, "{\"name\":\"x\"}");
        assertError(r, 403, "forbidden");
        assertThat(r.json().path("error").path("message").asString()).contains("notifications:write");
    }

    @Test
    void bodyWithoutJsonContentTypeIsUnsupported() {
        TestApp app = newApp();
        TestApi.Response r = api.send(api.request("/v1/app/settings", app.serverKey())
                .header("Content-Type", "text/plain").method("PATCH", HttpRequest.BodyPublishers.ofString("{\"name\":\"x\"}")));
        assertError(r, 415, "unsupported_media_type");
        TestApi.Response none = api.send(api.request("/v1/app/settings", app.serverKey())
                .method("PATCH", HttpRequest.BodyPublishers.ofString("{\"name\":\"x\"}")));
        assertError(none, 415, "unsupported_media_type");
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("name").asString()).isEqualTo("test app");
    }

    @Test
    void oversizedBodyWithContentLengthIsTooLarge() {
        TestApp app = newApp();
        String big = "{\"name\":\"" + "a".repeat(1024 * 1024) + "\"}";
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), big);
        assertError(r, 413, "payload_too_large");
    }

    @Test
    void oversizedChunkedBodyIsTooLarge() {
        TestApp app = newApp();
        byte[] big = ("{\"name\":\"" + "a".repeat(2 * 1024 * 1024) + "\"}").getBytes();
        // ofInputStream has no known length, so the client sends it chunked, without Content-Length
        TestApi.Response r = api.send(api.request("/v1/app/settings", app.serverKey())
                .header("Content-Type", "application/json")
                .method("PATCH", HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(big))));
        assertError(r, 413, "payload_too_large");
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("name").asString()).isEqualTo("test app");
    }

    @Test
    void chunkedBodyWithinLimitIsAccepted() {
        TestApp app = newApp();
        byte[] body = "{\"name\":\"renamed\"}".getBytes();
        TestApi.Response r = api.send(api.request("/v1/app/settings", app.serverKey())
                .header("Content-Type", "application/json")
                .method("PATCH", HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))));
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.json().path("name").asString()).isEqualTo("renamed");
    }

    @Test
    void malformedJsonIsBadRequest() {
        TestApp app = newApp();
        assertError(api.patch("/v1/app/settings", app.serverKey(), "{\"name\":"), 400, "malformed_request");
        assertError(api.patch("/v1/app/settings", app.serverKey(), "[1,2]"), 400, "malformed_request");
    }

    /**
     * A key twice in one object ({@code {"name":"a","name":"b"}}) is read differently by different
     * JSON readers; on every route it is a 400 naming the key, and nothing changes.
     */
    @Test
    void duplicateKeysAreMalformedAndNameTheKey() {
        TestApp app = newApp();
        record Case(String method, String path, String body, String field) {
        }
        for (Case c : List.of(
                new Case("PATCH", "/v1/app/settings", "{\"name\":\"a\",\"name\":\"b\"}", "name"),
                new Case("POST", "/v1/templates", "{\"name\":\"n\",\"content\":{\"title\":\"a\",\"body\":\"b\",\"title\":\"c\"}}",
                        "content.title"),
                new Case("POST", "/v1/notifications", "{\"title\":\"t\",\"body\":\"b\",\"target\":{\"type\":\"all\"},"
                        + "\"data\":{\"k\":[1,{\"x\":1,\"y\":2,\"x\":3}]}}", "data.k[1].x"),
                new Case("POST", "/v1/segments", "{\"name\":\"s\",\"filter\":{\"field\":\"platform\",\"operator\":\"eq\","
                        + "\"value\":\"ios\",\"value\":\"android\"}}", "filter.value"),
                new Case("POST", "/v1/devices/register", "{\"platform\":\"ios\",\"platform\":\"android\",\"push_token\":\"t\"}", "platform"))) {
            HttpRequest.Builder b = api.request(c.path(), app.serverKey()).header("Content-Type", "application/json")
                    .header("Idempotency-Key", UUID.randomUUID().toString())
                    .method(c.method(), HttpRequest.BodyPublishers.ofString(c.body()));
            TestApi.Response r = api.send(b);
            assertError(r, 400, "malformed_request");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(c.body()).containsExactly(c.field());
        }
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("name").asString()).isNotIn("a", "b");
        assertThat(api.get("/v1/templates", app.serverKey()).json().path("data").size()).isZero();
        assertThat(api.get("/v1/notifications", app.serverKey()).json().path("data").size()).isZero();
        assertThat(api.get("/v1/segments", app.serverKey()).json().path("data").size()).isZero();
        assertThat(api.get("/v1/devices", app.serverKey()).json().path("data").size()).isZero();
        // the same key in different objects is fine
        assertThat(api.patch("/v1/app/settings", app.serverKey(), "{\"name\":\"a\",\"notification_defaults\":{\"sound\":\"s\"}}")
                .status()).isEqualTo(200);
    }

    /**
     * A query parameter a route reads, given twice, is a 422 naming it on every route, as
     * {@code days} always was: the client could not tell which value counted. Others stay ignored.
     */
    @Test
    void repeatedQueryParametersAreValidationFailures() {
        TestApp app = newApp();
        for (String[] c : new String[][]{
                {"/v1/devices?limit=1&limit=200", "limit"},
                {"/v1/devices?limit=5&limit=5", "limit"},
                {"/v1/devices?page=1&page=2", "page"},
                {"/v1/devices?platform=ios&platform=android", "platform"},
                {"/v1/notifications?limit=1&page=1&limit=2", "limit"},
                {"/v1/templates?page=2&page=2", "page"},
                {"/v1/analytics?days=7&days=30", "days"}}) {
            TestApi.Response r = api.get(c[0], app.serverKey());
            assertError(r, 422, "validation_failed");
            assertThat(r.json().path("error").path("details").findValuesAsString("field")).as(c[0]).containsExactly(c[1]);
        }
        assertThat(api.get("/v1/devices?limit=5&utm=a&utm=b", app.serverKey()).status()).isEqualTo(200);
    }

    @Test
    void wrongFieldTypeIsValidationFailure() {
        TestApp app = newApp();
        TestApi.Response r = api.patch("/v1/app/settings", app.serverKey(), "{\"name\":12345,\"timezone\":\"Mars/Olympus\"}");
        assertError(r, 422, "validation_failed");
        assertThat(r.json().path("error").path("details").findValuesAsString("field")).containsExactlyInAnyOrder("name", "timezone");
        assertThat(api.get("/v1/app/settings", app.serverKey()).json().path("timezone").asString()).isEqualTo("UTC");
    }

    @Test
    void unknownRouteIsNotFound() {
        TestApp app = newApp();
        assertError(api.get("/v1/nope", app.serverKey()), 404, "not_found");
        assertError(api.get("/nope", null), 404, "not_found");
    }

    @Test
    void wrongMethodIsNotAllowed() {
        TestApp app = newApp();
        TestApi.Response r = api.send(api.request("/v1/app/settings", app.serverKey())
                .header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString("{}")));
        assertError(r, 405, "method_not_allowed");
        assertThat(r.header("Allow").orElse("")).contains("GET").contains("PATCH");
    }

    @Test
    void validRequestIdIsEchoed() {
        TestApp app = newApp();
        String id = UUID.randomUUID().toString();
        TestApi.Response ok = api.send(api.request("/v1/app/settings", app.serverKey()).header("X-Request-ID", id).GET());
        assertThat(ok.header("X-Request-ID")).contains(id);
        TestApi.Response error = api.send(api.request("/v1/app/settings", null).header("X-Request-ID", id).GET());
        assertThat(error.header("X-Request-ID")).contains(id);
        assertThat(error.json().path("request_id").asString()).isEqualTo(id);
    }

    @Test
    void missingRequestIdIsMinted() {
        TestApp app = newApp();
        TestApi.Response ok = api.get("/v1/app/settings", app.serverKey());
        TestApi.Response error = api.get("/v1/nope", app.serverKey());
        for (TestApi.Response r : new TestApi.Response[] {ok, error}) {
            String id = r.header("X-Request-ID").orElseThrow();
            assertThat(UUID.fromString(id).toString()).isEqualTo(id);
        }
        assertThat(error.json().path("request_id").asString()).isEqualTo(error.header("X-Request-ID").orElseThrow());
    }

    @Test
    void invalidRequestIdIsReplaced() {
        TestApp app = newApp();
        for (String bad : new String[] {"not-a-uuid", "12345", "'; drop table apps;--", "a".repeat(300)}) {
            TestApi.Response ok = api.send(api.request("/v1/app/settings", app.serverKey()).header("X-Request-ID", bad).GET());
            TestApi.Response error = api.send(api.request("/v1/nope", app.serverKey()).header("X-Request-ID", bad).GET());
            for (TestApi.Response r : new TestApi.Response[] {ok, error}) {
                String id = r.header("X-Request-ID").orElseThrow();
                assertThat(id).isNotEqualTo(bad);
                UUID.fromString(id);
            }
        }
    }
}
