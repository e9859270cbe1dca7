package dev.pushservice.notifications;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL of the per-app send throttle: the lock row every page that takes slots holds until it
 * commits, and the slots taken per minute. Every statement is keyed by the app.
 */
@Repository
class SendThrottleRepository {

    private final JdbcClient jdbc;

    SendThrottleRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Locks the app's throttle row (made on first use) until the transaction ends. */
    void lock(UUID appId) {
        jdbc.sql("insert into send_throttles (app_id) values (:app) on conflict (app_id) do update set app_id = excluded.app_id")
                .param("app", appId).update();
    }

    /** Slots taken per minute (epoch microseconds of the minute's start) in [from, to). */
    Map<Long, Integer> minutes(UUID appId, Instant from, Instant to) {
        Map<Long, Integer> used = new TreeMap<>();
        jdbc.sql("select minute, used from send_throttle_minutes where app_id = :app and minute >= :from and minute < :to")
                .param("app", appId).param("from", ts(from)).param("to", ts(to))
                .query(rs -> {
                    Instant minute = rs.getObject("minute", OffsetDateTime.class).toInstant();
                    used.put(minute.getEpochSecond() * 1_000_000L, rs.getInt("used"));
                });
        return used;
    }

    /** Stores the slots taken of each minute in {@code used} (epoch microseconds → slots), one statement. */
    void save(UUID appId, Map<Long, Integer> used) {
        if (used.isEmpty()) return;
        StringBuilder minutes = new StringBuilder("{");
        StringBuilder counts = new StringBuilder("{");
        used.forEach((minute, n) -> {
            if (minutes.length() > 1) {
                minutes.append(',');
                counts.append(',');
            }
            minutes.append(minute);
            counts.append(n);
        });
        jdbc.sql("""
                        insert into send_throttle_minutes (app_id, minute, used)
                        select :app, to_timestamp(m / 1e6), n
                        from unnest(cast(:minutes as bigint[]), cast(:counts as integer[])) as v(m, n)
                        on conflict (app_id, minute) do update set used = excluded.used""")
                .param("app", appId).param("minutes", minutes.append('}').toString())
                .param("counts", counts.append('}').toString()).update();
    }

    /** Forgets minutes before {@code before}: slots in the past are never taken again. */
    void prune(UUID appId, Instant before) {
        jdbc.sql("delete from send_throttle_minutes where app_id = :app and minute < :before")
                .param("app", appId).param("before", ts(before)).update();
    }

    private static OffsetDateTime ts(Instant at) {
        return OffsetDateTime.ofInstant(at, ZoneOffset.UTC);
    }
}
