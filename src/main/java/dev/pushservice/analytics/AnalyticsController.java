package dev.pushservice.analytics;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.rules.Limits;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /v1/analytics?days=N}: checks {@code days} and answers what {@link AnalyticsService}
 * reads for the last N days.
 */
@RestController
class AnalyticsController {

    static final int DEFAULT_DAYS = 30;

    private final AnalyticsService analytics;

    AnalyticsController(AnalyticsService analytics) {
        this.analytics = analytics;
    }

    @GetMapping("/v1/analytics")
    @Authorize(Scope.NOTIFICATIONS_READ)
    AnalyticsService.Analytics get(ApiPrincipal caller, @RequestParam(required = false) String days) {
        return analytics.lastDays(caller.appId(), days(days));
    }

    /** Strict: digits only (no {@code 7.5}, {@code +7}, {@code x}), 1 to {@value Limits#ANALYTICS_DAYS}. */
    private static int days(String raw) {
        if (raw == null) return DEFAULT_DAYS;
        if (!raw.matches("-?[0-9]{1,10}")) throw InvalidInput.of("days", "must be an integer");
        long value = Long.parseLong(raw);
        if (value < 1 || value > Limits.ANALYTICS_DAYS) throw InvalidInput.of("days", "must be between 1 and " + Limits.ANALYTICS_DAYS);
        return (int) value;
    }
}
