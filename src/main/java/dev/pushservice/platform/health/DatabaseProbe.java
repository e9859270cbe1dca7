package dev.pushservice.platform.health;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks PostgreSQL through a pool of its own (at most two connections, same server and user as
 * the main pool). A separate pool keeps the probe honest and bounded: it neither waits behind a
 * saturated main pool nor takes its connections, and every step has a short timeout (connection
 * 2 s, each statement 2 s, socket reads 5 s), so a dead database is reported in seconds.
 */
final class DatabaseProbe implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(DatabaseProbe.class);
    static final int TIMEOUT_SECONDS = 2;

    private final HikariDataSource pool;
    private final String statsQuery;

    DatabaseProbe(HikariDataSource main, String schedulerTable) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("push-health");
        config.setJdbcUrl(main.getJdbcUrl());
        config.setUsername(main.getUsername());
        config.setPassword(main.getPassword());
        config.setMaximumPoolSize(2);
        config.setMinimumIdle(1);
        config.setConnectionTimeout(TIMEOUT_SECONDS * 1000L);
        config.setValidationTimeout(1000);
        config.setInitializationFailTimeout(-1); // never fail start-up: the main pool does that
        config.setReadOnly(true);
        config.addDataSourceProperty("connectTimeout", Integer.toString(TIMEOUT_SECONDS));
        config.addDataSourceProperty("loginTimeout", Integer.toString(TIMEOUT_SECONDS));
        config.addDataSourceProperty("socketTimeout", "5");
        config.addDataSourceProperty("ApplicationName", "push-service-health");
        this.pool = new HikariDataSource(config);
        // one pass over scheduled_tasks (it holds only unfinished work) plus the dead-letter count
        this.statsQuery = """
                select count(*) filter (where not picked and execution_time <= now()) as queue_depth,
                       count(*) filter (where not picked) as pending,
                       coalesce(floor(extract(epoch from now() - min(execution_time)
                           filter (where not picked and execution_time <= now()))), 0)::bigint as oldest_due_age,
                       count(*) filter (where picked) as running,
                       count(*) filter (where consecutive_failures > 0) as retrying,
                       (select count(*) from dead_letter_jobs) as dead_lettered
                from %s""".formatted(schedulerTable);
    }

    /** One {@code select 1} round trip: the database is up when it answers within the timeouts. */
    HealthReport.Component ping() {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.setQueryTimeout(TIMEOUT_SECONDS);
            long start = System.nanoTime();
            try (ResultSet r = s.executeQuery("select 1")) {
                r.next();
            }
            return HealthReport.Component.up(System.nanoTime() - start);
        } catch (SQLException | RuntimeException e) {
            log.warn("Health check: database unreachable ({})", e.getClass().getSimpleName());
            return HealthReport.Component.down();
        }
    }

    /**
     * The job counts, or null if they cannot be read in time. Kept apart from {@link #ping()} so
     * that a huge backlog that makes counting slow never turns into "database down" and a 503
     * that would take every instance out of its load balancer.
     */
    HealthReport.Jobs jobs(Instant countedAt) {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.setQueryTimeout(TIMEOUT_SECONDS);
            try (ResultSet r = s.executeQuery(statsQuery)) {
                r.next();
                return new HealthReport.Jobs(r.getLong("queue_depth"), r.getLong("pending"),
                        r.getLong("oldest_due_age"), r.getLong("running"), r.getLong("retrying"),
                        r.getLong("dead_lettered"), countedAt);
            }
        } catch (SQLException | RuntimeException e) {
            log.warn("Health check: job counts not available ({})", e.getClass().getSimpleName());
            return null;
        }
    }

    @Override
    public void close() {
        pool.close();
    }
}
