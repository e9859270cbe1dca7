package dev.pushservice.events;

import java.time.LocalDate;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;

/**
 * Reads the per-day event counters ({@code event_daily_counts}) that ingest keeps. Days are calendar
 * days in the app's time zone as it was when each event was written. Cost is bounded by days x
 * (types + distinct names), never by the number of events.
 */
@Service
public class EventCounts {

    private final JdbcClient jdbc;

    EventCounts(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Events of one type on one day (all names summed). */
    public record DailyCount(LocalDate day, EventType type, long count) {
    }

    /** Total of one named event over a period. */
    public record NamedTotal(String name, long total) {
    }

    /** Per day and type, {@code from} to {@code to} inclusive; days and types without events are absent. */
    public List<DailyCount> daily(UUID appId, LocalDate from, LocalDate to) {
        return jdbc.sql("""
                        select day, event_type, sum(count) as total from event_daily_counts
                        where app_id = :app and day between :from and :to
                        group by day, event_type""")
                .param("app", appId).param("from", from).param("to", to)
                .query((rs, n) -> {
                    // only types of the closed list are ever written; one that is not is skipped, not fatal
                    EventType type = EventType.fromValue(rs.getString("event_type")).orElse(null);
                    return type == null ? null : new DailyCount(rs.getObject("day", LocalDate.class), type, rs.getLong("total"));
                })
                .list().stream().filter(java.util.Objects::nonNull).toList();
    }

    /** Totals per name of events of {@code type} over the period, largest first, then by name. */
    public List<NamedTotal> totalsByName(UUID appId, EventType type, LocalDate from, LocalDate to) {
        return jdbc.sql("""
                        select event_name, sum(count) as total from event_daily_counts
                        where app_id = :app and event_type = :type and day between :from and :to
                        group by event_name
                        order by total desc, event_name""")
                .param("app", appId).param("type", type.value()).param("from", from).param("to", to)
                .query((rs, n) -> new NamedTotal(rs.getString("event_name"), rs.getLong("total")))
                .list();
    }
}
