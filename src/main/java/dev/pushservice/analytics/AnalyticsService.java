package dev.pushservice.analytics;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.events.EventCounts;
import dev.pushservice.events.EventType;
import java.time.Clock;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.stereotype.Service;

/**
 * Daily analytics of an app: one entry per day (today in the app's time zone, from the injected
 * {@link Clock}, and the days before, oldest first), each with a count for every event type (zeros
 * included), plus outcome totals by name over the period. Reads the counters of {@link EventCounts}.
 */
@Service
class AnalyticsService {

    private final EventCounts counts;
    private final AppSettingsService settings;
    private final Clock clock;

    AnalyticsService(EventCounts counts, AppSettingsService settings, Clock clock) {
        this.counts = counts;
        this.settings = settings;
        this.clock = clock;
    }

    record Day(LocalDate date, Map<String, Long> events) {
    }

    record Outcome(String eventName, long total) {
    }

    record Analytics(int days, String timezone, List<Day> daily, List<Outcome> outcomes) {
    }

    /** The last {@code days} days, today included. */
    Analytics lastDays(UUID app, int days) {
        ZoneId zone = settings.timeZone(app);
        LocalDate today = LocalDate.now(clock.withZone(zone));
        LocalDate from = today.minusDays(days - 1L);

        Map<LocalDate, Map<EventType, Long>> byDay = new HashMap<>();
        for (EventCounts.DailyCount c : counts.daily(app, from, today)) {
            byDay.computeIfAbsent(c.day(), d -> new HashMap<>()).put(c.type(), c.count());
        }
        List<Day> daily = new ArrayList<>(days);
        for (LocalDate d = from; !d.isAfter(today); d = d.plusDays(1)) {
            Map<EventType, Long> found = byDay.getOrDefault(d, Map.of());
            Map<String, Long> events = new LinkedHashMap<>();
            for (EventType t : EventType.values()) events.put(t.value(), found.getOrDefault(t, 0L));
            daily.add(new Day(d, events));
        }
        List<Outcome> outcomes = counts.totalsByName(app, EventType.OUTCOME, from, today).stream()
                .map(t -> new Outcome(t.name(), t.total()))
                .toList();
        return new Analytics(days, zone.getId(), daily, outcomes);
    }
}
