package dev.pushservice.platform;

import static dev.pushservice.support.ApiAssertions.assertError;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.apps.Tenants;
import dev.pushservice.platform.auth.KeyKind;
import dev.pushservice.support.ApiTest;
import dev.pushservice.support.TestApi;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * Limits are tiny here (own context, same database server) so they can be reached quickly:
 * an app may make 3 requests in a burst, an organisation 5. Refill is 1 per second, so each test
 * uses fresh organisations and finishes well within a refill. Runs against Redis when REDIS_URL is set.
 */
@TestPropertySource(properties = {
        "push.rate-limit.app-per-second=1", "push.rate-limit.app-burst=3",
        "push.rate-limit.org-per-second=1", "push.rate-limit.org-burst=5"})
class RateLimitTests extends ApiTest {

    /**
     * One request of an app of its own first: with Redis the limiter connects at its first use, which took 3 s on a
     * slow machine, and a test's burst then refilled (1 a second) before it could be spent.
     */
    @BeforeEach
    void limiterConnected() {
        assertThat(api.get("/v1/app/settings", newApp().serverKey()).status()).isEqualTo(200);
    }

    @Test
    void appOverItsLimitGetsRateLimitedWithHeaders() {
        TestApp app = newApp();
        for (int i = 0; i < 3; i++) {
            TestApi.Response ok = api.get("/v1/app/settings", app.serverKey());
            assertThat(ok.status()).isEqualTo(200);
            assertThat(ok.header("RateLimit-Policy").orElseThrow()).contains("\"app\";q=3;w=3").contains("\"org\";q=5;w=5");
            assertThat(ok.header("RateLimit").orElseThrow()).startsWith("\"app\";r=" + (2 - i) + ";");
        }
        TestApi.Response limited = api.get("/v1/app/settings", app.serverKey());
        assertError(limited, 429, "rate_limited");
        long retryAfter = Long.parseLong(limited.header("Retry-After").orElseThrow());
        assertThat(retryAfter).isBetween(1L, 2L);
        assertThat(limited.header("RateLimit").orElseThrow()).isEqualTo("\"app\";r=0;t=3");
        assertThat(limited.header("RateLimit-Policy").orElseThrow()).as("both buckets apply, also when the app's refused")
                .isEqualTo("\"app\";q=3;w=3, \"org\";q=5;w=5");
    }

    /**
     * Requests of one app at once (with Redis, batched into shared round trips): exactly the burst passes, plus at
     * most what refilled while they ran; never more, never fewer.
     */
    @Test
    void concurrentRequestsOfOneAppSpendItsBucketExactly() throws Exception {
        TestApp app = newApp();
        int requests = 24;
        long started = System.nanoTime();
        List<Integer> statuses;
        try (ExecutorService pool = Executors.newFixedThreadPool(12)) {
            List<Future<Integer>> answers = new ArrayList<>();
            for (int i = 0; i < requests; i++) {
                answers.add(pool.submit(() -> api.get("/v1/app/settings", app.serverKey()).status()));
            }
            statuses = new ArrayList<>();
            for (Future<Integer> answer : answers) statuses.add(answer.get());
        }
        long refilled = (System.nanoTime() - started) / 1_000_000_000L; // the app's bucket refills 1 a second
        long passed = statuses.stream().filter(s -> s == 200).count();
        assertThat(statuses).as("every answer is a pass or a refusal").allMatch(s -> s == 200 || s == 429);
        assertThat(passed).as("the burst of 3, plus %d refilled while the requests ran", refilled).isBetween(3L, 3L + refilled);
    }

    @Test
    void oneAppsLimitDoesNotSpendAnotherApps() {
        TestApp busy = newApp();
        TestApp other = newApp();
        for (int i = 0; i < 3; i++) api.get("/v1/app/settings", busy.serverKey());
        assertThat(api.get("/v1/app/settings", busy.serverKey()).status()).isEqualTo(429);
        TestApi.Response r = api.get("/v1/app/settings", other.serverKey());
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("RateLimit").orElseThrow()).startsWith("\"app\";r=2;");
    }

    @Test
    void appsOfOneOrganisationShareItsLimit() {
        TestApp first = newApp();
        Tenants.App sibling = tenants.createApp(first.orgId(), "sibling", "UTC");
        String siblingKey = tenants.issueKey(sibling.id(), KeyKind.SERVER, "k", Set.of(), null).rawKey();
        for (int i = 0; i < 3; i++) assertThat(api.get("/v1/app/settings", first.serverKey()).status()).isEqualTo(200);
        assertThat(api.get("/v1/app/settings", siblingKey).status()).isEqualTo(200);
        TestApi.Response last = api.get("/v1/app/settings", siblingKey);
        assertThat(last.status()).isEqualTo(200);
        assertThat(last.header("RateLimit").orElseThrow()).startsWith("\"org\";r=0;");
        TestApi.Response limited = api.get("/v1/app/settings", siblingKey);
        assertError(limited, 429, "rate_limited");
        assertThat(limited.json().path("error").path("message").asString()).contains("organisation");
        assertThat(limited.header("Retry-After")).isPresent();
    }

    @Test
    void serviceEndpointsAreNotRateLimited() {
        for (int i = 0; i < 10; i++) {
            for (String path : new String[] {"/health", "/status", "/openapi.yaml"}) {
                TestApi.Response r = api.get(path, null);
                assertThat(r.status()).as(path).isEqualTo(200);
                assertThat(r.header("RateLimit")).as(path).isEmpty();
            }
        }
    }
}
