package dev.pushservice.events;

import java.time.LocalDate;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** SQL reading {@code event_daily_counts}, the per-day counters ingest keeps. Every statement filters by app. */
@Repository
class EventCountRepository {

    private final JdbcClient jdbc;

    EventCountRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    List<EventCounts.DailyCount> daily(UUID appId, LocalDate from, LocalDate to) {
        return jdbc.sql("""
                        select day, event_type, sum(count) as total from event_daily_counts
                        where app_id = :app and day between :from and :to
                        group by day, event_type""")
                .param("app", appId).param("from", from).param("to", to)
                .query((rs, n) -> {
                    // only types of the closed list are ever written; one that is not is skipped, not fatal
                    EventType type = EventType.fromValue(rs.getString("event_type")).orElse(null);
                    return type == null ? null
                            : new EventCounts.DailyCount(rs.getObject("day", LocalDate.class), type, rs.getLong("total"));
                })
                .list().stream().filter(Objects::nonNull).toList();
    }

    List<EventCounts.NamedTotal> totalsByName(UUID appId, EventType type, LocalDate from, LocalDate to) {
        return jdbc.sql("""
                        select event_name, sum(count) as total from event_daily_counts
                        where app_id = :app and event_type = :type and day between :from and :to
                        group by event_name
                        order by total desc, event_name""")
                .param("app", appId).param("type", type.value()).param("from", from).param("to", to)
                .query((rs, n) -> new EventCounts.NamedTotal(rs.getString("event_name"), rs.getLong("total")))
                .list();
    }
}
