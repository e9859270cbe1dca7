package dev.pushservice.platform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** {@code /health}, {@code /status} and {@code /actuator/prometheus} on the shared test instance. */
class HealthTests extends ApiTest {

    @Test
    void healthReportsEveryComponentWithoutAuthentication() {
        TestApi.Response r = api.get("/health", null);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.header("Content-Type").orElseThrow()).startsWith("application/json");
        assertThat(r.header("Cache-Control").orElseThrow()).contains("no-store");
        JsonNode body = r.json();
        assertThat(body.path("status").asString()).isIn("ok", "degraded");
        assertThat(Instant.parse(body.path("checked_at").asString())).isBetween(Instant.now().minusSeconds(60), Instant.now().plusSeconds(5));
        assertThat(body.path("roles").isArray()).isTrue();
        assertThat(body.path("api").path("status").asString()).isEqualTo("up");
        assertThat(body.path("database").path("status").asString()).isEqualTo("up");
        assertThat(body.path("database").path("latency_ms").isNumber()).isTrue();
        assertThat(body.path("database").path("latency_ms").asDouble()).isBetween(0.0, 2000.0);
        String redis = body.path("redis").path("status").asString();
        assertThat(redis).isIn("up", "down", "not_configured");
        assertThat(body.path("redis").has("latency_ms")).isTrue();
        JsonNode jobs = body.path("jobs");
        for (String field : new String[] {"queue_depth", "pending", "oldest_due_age_seconds", "running", "retrying", "dead_lettered"}) {
            assertThat(jobs.path(field).isIntegralNumber()).as(field).isTrue();
            assertThat(jobs.path(field).asLong()).as(field).isGreaterThanOrEqualTo(0);
        }
        Instant counted = Instant.parse(jobs.path("counted_at").asString());
        assertThat(Duration.between(counted, Instant.parse(body.path("checked_at").asString())))
                .isBetween(Duration.ZERO, Duration.ofSeconds(6));
    }

    @Test
    void healthCarriesRequestIdAndIgnoresApiKeys() {
        String id = UUID.randomUUID().toString();
        TestApi.Response r = api.send(api.request("/health", "ps_live_not-a-key").header("X-Request-ID", id).GET());
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("X-Request-ID")).contains(id);
        TestApi.Response minted = api.get("/status", null);
        assertThat(UUID.fromString(minted.header("X-Request-ID").orElseThrow())).isNotNull();
    }

    @Test
    void healthIsNotRateLimited() {
        for (int i = 0; i < 50; i++) {
            TestApi.Response r = api.get("/health", null);
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("RateLimit")).isEmpty();
            assertThat(r.header("RateLimit-Policy")).isEmpty();
        }
    }

    @Test
    void statusPageShowsTheSameFactsAsReadableHtml() {
        TestApi.Response r = api.get("/status", null);
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("Content-Type").orElseThrow()).startsWith("text/html").contains("UTF-8");
        assertThat(r.header("Content-Security-Policy").orElseThrow()).contains("default-src 'none'");
        String html = r.body();
        assertThat(html).startsWith("<!doctype html>").contains("<style>")
                .doesNotContain("<script").doesNotContain("src=").doesNotContain("http://").doesNotContain("https://");
        assertThat(html).contains("Push Service status").containsPattern("All systems operational|Degraded");
        assertThat(html).contains("Database").contains("✓ Up").containsPattern("\\d+\\.\\d\\d ms");
        assertThat(html).contains("Queue depth").contains("Dead-lettered").containsPattern("\\d+ jobs?<")
                .containsPattern("\\d+ s<");
        assertThat(html).containsPattern("Counted \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC");
        assertThat(html).containsPattern("Generated \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC");
        assertThat(html).doesNotContain("postgres").doesNotContain("jdbc").doesNotContain("password");
    }

    @Test
    void prometheusServesRequestMetricsByRouteTemplateWithoutAuthentication() {
        TestApp app = newApp();
        assertThat(api.get("/v1/app/settings", app.serverKey()).status()).isEqualTo(200);
        String secretish = "nope-" + UUID.randomUUID();
        assertThat(api.get("/v1/" + secretish, app.serverKey()).status()).isEqualTo(404);
        assertThat(api.get("/health", null).status()).isEqualTo(200);

        TestApi.Response r = api.get("/actuator/prometheus", null);
        assertThat(r.status()).as(r.toString()).isEqualTo(200);
        assertThat(r.header("Content-Type").orElseThrow()).startsWith("text/plain");
        String metrics = r.body();
        assertThat(metrics).containsPattern(
                "(?m)^http_server_requests_seconds_count\\{(?=[^}]*uri=\"/v1/app/settings\")(?=[^}]*status=\"200\")(?=[^}]*method=\"GET\")[^}]*} \\d");
        assertThat(metrics).containsPattern(
                "(?m)^http_server_requests_seconds_count\\{(?=[^}]*uri=\"/health\")(?=[^}]*status=\"200\")[^}]*} \\d");
        assertThat(metrics).containsPattern("(?m)^http_server_requests_seconds_bucket\\{");
        assertThat(metrics).containsPattern(
                "(?m)^http_server_requests_seconds_count\\{(?=[^}]*status=\"404\")[^}]*} \\d");
        // raw paths never become tag values: one series per route, not per URL
        assertThat(metrics).doesNotContain(secretish);
    }

    @Test
    void healthSnapshotsAreReusedForAtMostOneSecond() throws Exception {
        java.util.Set<String> snapshots = new java.util.HashSet<>();
        long started = System.nanoTime();
        for (int i = 0; i < 40; i++) {
            snapshots.add(api.get("/health", null).json().path("checked_at").asString());
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        // a new snapshot is taken only once the previous one is a second old
        assertThat(snapshots.size()).as("%d requests in %.1f s", 40, seconds).isLessThanOrEqualTo((int) seconds + 2);

        Instant first = checkedAt();
        Instant later = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                .until(this::checkedAt, t -> t.isAfter(first));
        // renewed once the snapshot is a second old, not earlier and not much later
        assertThat(Duration.between(first, later)).isBetween(Duration.ofMillis(950), Duration.ofSeconds(3));
    }

    private Instant checkedAt() {
        return Instant.parse(api.get("/health", null).json().path("checked_at").asString());
    }
}
