package dev.pushservice.events;

import java.time.LocalDate;
import java.util.List;
import java.util.UUID;
import org.springframework.stereotype.Service;

/**
 * Reads the per-day event counters ({@code event_daily_counts}) that ingest keeps. Days are calendar
 * days in the app's time zone as it was when each event was written. Cost is bounded by days x
 * (types + distinct names), never by the number of events.
 */
@Service
public class EventCounts {

    private final EventCountRepository counts;

    EventCounts(EventCountRepository counts) {
        this.counts = counts;
    }

    /** Events of one type on one day (all names summed). */
    public record DailyCount(LocalDate day, EventType type, long count) {
    }

    /** Total of one named event over a period. */
    public record NamedTotal(String name, long total) {
    }

    /** Per day and type, {@code from} to {@code to} inclusive; days and types without events are absent. */
    public List<DailyCount> daily(UUID appId, LocalDate from, LocalDate to) {
        return counts.daily(appId, from, to);
    }

    /** Totals per name of events of {@code type} over the period, largest first, then by name. */
    public List<NamedTotal> totalsByName(UUID appId, EventType type, LocalDate from, LocalDate to) {
        return counts.totalsByName(appId, type, from, to);
    }
}
