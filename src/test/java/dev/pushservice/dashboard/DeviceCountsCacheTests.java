package dev.pushservice.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pushservice.members.MemberRole;
import dev.pushservice.support.TestTokens;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The overview's device counts as the service runs them: kept per app and recounted in the background
 * once older than {@code push.dashboard.device-counts-refresh} (here 2 s; 30 s by default), so a view
 * never waits for a count of the app's devices except the first.
 */
class DeviceCountsCacheTests extends DashboardTest {

    @DynamicPropertySource
    static void refresh(DynamicPropertyRegistry registry) {
        registry.add("push.dashboard.device-counts-refresh", () -> "2s");
    }

    @Test
    void theOverviewsCountsAreRecountedInTheBackgroundOnceOlderThanTheRefreshTime() {
        TestApp app = newApp();
        register(app);
        DashboardClient browser = signedIn(app, MemberRole.MEMBER);
        String overview = "/dashboard/apps/" + app.appId();
        assertThat(browser.get(overview).body()).contains("id=\"subscribed\">1<");

        register(app);
        assertThat(browser.get(overview).body()).as("served from memory").contains("id=\"subscribed\">1<");
        // read after the refresh time: served once more as it was while the recount runs, then the new count
        Awaitility.await().pollDelay(Duration.ofMillis(500)).atMost(Duration.ofSeconds(20))
                .until(() -> browser.get(overview).body().contains("id=\"subscribed\">2<"));
        // another app is counted on its own
        TestApp other = newApp();
        register(other);
        register(other);
        register(other);
        assertThat(signedIn(other, MemberRole.MEMBER).get("/dashboard/apps/" + other.appId()).body()).contains("id=\"subscribed\">3<");
    }

    private void register(TestApp app) {
        assertThat(api.post("/v1/devices/register", app.publicKey(),
                "{\"platform\":\"ios\",\"push_token\":\"" + TestTokens.apns() + "\"}").status()).isEqualTo(201);
    }
}
