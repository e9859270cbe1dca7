package dev.pushservice.analytics;

import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.events.EventCounts;
import dev.pushservice.events.EventType;
import dev.pushservice.notifications.DeliveryOutcomeCounts;
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
 * {@link Clock}, and the days before, oldest first), each with a count for every event type and for
 * every delivery outcome (zeros included), plus event outcome totals by name and delivery outcome
 * totals over the period. Reads the counters of {@link EventCounts} and {@link DeliveryOutcomeCounts}.
 */
@Service
public class AnalyticsService {

    private final EventCounts counts;
    private final DeliveryOutcomeCounts deliveries;
    private final AppSettingsService settings;
    private final Clock clock;

    AnalyticsService(EventCounts counts, DeliveryOutcomeCounts deliveries, AppSettingsService settings, Clock clock) {
        this.counts = counts;
        this.deliveries = deliveries;
        this.settings = settings;
        this.clock = clock;
    }

    /** {@code deliveries}: recipients that reached each terminal state that day (every state present). */
    public record Day(LocalDate date, Map<String, Long> events, Map<String, Long> deliveries) {
    }

    public record Outcome(String eventName, long total) {
    }

    public record Analytics(int days, String timezone, List<Day> daily, List<Outcome> outcomes, Map<String, Long> deliveryTotals) {
    }

    /** The last {@code days} days, today included. */
    public Analytics lastDays(UUID app, int days) {
        ZoneId zone = settings.timeZone(app);
        LocalDate today = LocalDate.now(clock.withZone(zone));
        LocalDate from = today.minusDays(days - 1L);

        Map<LocalDate, Map<EventType, Long>> byDay = new HashMap<>();
        for (EventCounts.DailyCount c : counts.daily(app, from, today)) {
            byDay.computeIfAbsent(c.day(), d -> new HashMap<>()).put(c.type(), c.count());
        }
        Map<LocalDate, Map<String, Long>> deliveredByDay = new HashMap<>();
        for (DeliveryOutcomeCounts.DailyCount c : deliveries.daily(app, from, today)) {
            deliveredByDay.computeIfAbsent(c.day(), d -> new HashMap<>()).merge(c.outcome(), c.count(), Long::sum);
        }
        Map<String, Long> deliveryTotals = zeroOutcomes();
        List<Day> daily = new ArrayList<>(days);
        for (LocalDate d = from; !d.isAfter(today); d = d.plusDays(1)) {
            Map<EventType, Long> found = byDay.getOrDefault(d, Map.of());
            Map<String, Long> events = new LinkedHashMap<>();
            for (EventType t : EventType.values()) events.put(t.value(), found.getOrDefault(t, 0L));
            Map<String, Long> delivered = zeroOutcomes();
            deliveredByDay.getOrDefault(d, Map.of()).forEach((outcome, n) -> delivered.merge(outcome, n, Long::sum));
            delivered.forEach((outcome, n) -> deliveryTotals.merge(outcome, n, Long::sum));
            daily.add(new Day(d, events, delivered));
        }
        List<Outcome> outcomes = counts.totalsByName(app, EventType.OUTCOME, from, today).stream()
                .map(t -> new Outcome(t.name(), t.total()))
                .toList();
        return new Analytics(days, zone.getId(), daily, outcomes, deliveryTotals);
    }

    /** Every terminal recipient state at zero, in {@link DeliveryOutcomeCounts#OUTCOMES} order. */
    private static Map<String, Long> zeroOutcomes() {
        Map<String, Long> zeros = new LinkedHashMap<>();
        for (String outcome : DeliveryOutcomeCounts.OUTCOMES) zeros.put(outcome, 0L);
        return zeros;
    }
}
