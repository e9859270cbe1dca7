package dev.pushservice.analytics;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.events.EventCounts;
import dev.pushservice.events.EventType;
import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.domain.InvalidInput;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /v1/analytics?days=N}: one entry per day (today in the app's time zone and the N-1
 * days before, oldest first), each with a count for every event type (zeros included), plus
 * outcome totals by name over the period.
 */
@RestController
class AnalyticsController {

    static final int DEFAULT_DAYS = 30;
    static final int MAX_DAYS = 365;

    private final EventCounts counts;
    private final AppSettingsService settings;

    AnalyticsController(EventCounts counts, AppSettingsService settings) {
        this.counts = counts;
        this.settings = settings;
    }

    record Day(LocalDate date, Map<String, Long> events) {
    }

    record Outcome(String eventName, long total) {
    }

    record Analytics(int days, String timezone, List<Day> daily, List<Outcome> outcomes) {
    }

    @GetMapping("/v1/analytics")
    @Authorize(Scope.NOTIFICATIONS_READ)
    Analytics get(ApiPrincipal caller, @RequestParam(required = false) String days) {
        int n = days(days);
        String timezone = settings.read(caller.appId()).timezone();
        LocalDate today = LocalDate.now(zone(timezone));
        LocalDate from = today.minusDays(n - 1L);
        UUID app = caller.appId();

        Map<LocalDate, Map<EventType, Long>> byDay = new HashMap<>();
        for (EventCounts.DailyCount c : counts.daily(app, from, today)) {
            byDay.computeIfAbsent(c.day(), d -> new HashMap<>()).put(c.type(), c.count());
        }
        List<Day> daily = new ArrayList<>(n);
        for (LocalDate d = from; !d.isAfter(today); d = d.plusDays(1)) {
            Map<EventType, Long> found = byDay.getOrDefault(d, Map.of());
            Map<String, Long> events = new LinkedHashMap<>();
            for (EventType t : EventType.values()) events.put(t.value(), found.getOrDefault(t, 0L));
            daily.add(new Day(d, events));
        }
        List<Outcome> outcomes = counts.totalsByName(app, EventType.OUTCOME, from, today).stream()
                .map(t -> new Outcome(t.name(), t.total()))
                .toList();
        return new Analytics(n, timezone, daily, outcomes);
    }

    /** Strict: digits only (no {@code 7.5}, {@code +7}, {@code x}), 1 to {@value #MAX_DAYS}. */
    private static int days(String raw) {
        if (raw == null) return DEFAULT_DAYS;
        if (!raw.matches("-?[0-9]{1,10}")) throw InvalidInput.of("days", "must be an integer");
        long value = Long.parseLong(raw);
        if (value < 1 || value > MAX_DAYS) throw InvalidInput.of("days", "must be between 1 and " + MAX_DAYS);
        return (int) value;
    }

    private static ZoneId zone(String id) {
        try {
            return ZoneId.of(id);
        } catch (DateTimeException | NullPointerException e) {
            return ZoneOffset.UTC;
        }
    }
}
