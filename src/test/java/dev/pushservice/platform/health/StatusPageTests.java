package dev.pushservice.platform.health;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class StatusPageTests {

    private static HealthReport report(String status, HealthReport.Component redis, HealthReport.Jobs jobs, List<String> roles) {
        return new HealthReport(status, Instant.parse("2025-03-04T05:06:07Z"), roles,
                new HealthReport.Component("up", null), new HealthReport.Component("up", 1.5), redis, jobs, java.util.List.of());
    }

    @Test
    void everyValueIsEscaped() {
        String html = StatusPage.render(report("ok", new HealthReport.Component("<b>odd</b>", null), null,
                List.of("<script>alert(1)</script>", "a&b")));
        assertThat(html).doesNotContain("<script>").doesNotContain("<b>odd")
                .contains("&lt;script&gt;alert(1)&lt;/script&gt;").contains("a&amp;b").contains("&lt;b&gt;odd&lt;/b&gt;");
    }

    @Test
    void numbersCarryUnits() {
        HealthReport.Jobs jobs = new HealthReport.Jobs(1, 12_345, 3725, 0, 2, 1, Instant.parse("2025-03-04T05:06:05Z"));
        String html = StatusPage.render(report("degraded", new HealthReport.Component("down", null), jobs, List.of("api")));
        assertThat(html).contains(">1 job<").contains(">12,345 jobs<").contains(">1 h 2 min<").contains(">0 jobs<")
                .contains("1.50 ms").contains("Generated 2025-03-04 05:06:07 UTC").contains("Counted 2025-03-04 05:06:05 UTC")
                .contains("Degraded").contains("✕ Down");
    }

    @Test
    void agesReadNaturally() {
        assertThat(StatusPage.age(0)).isEqualTo("0 s");
        assertThat(StatusPage.age(59)).isEqualTo("59 s");
        assertThat(StatusPage.age(61)).isEqualTo("1 min 1 s");
        assertThat(StatusPage.age(90_000)).isEqualTo("1 d 1 h");
    }
}
