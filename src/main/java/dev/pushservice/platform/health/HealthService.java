package dev.pushservice.platform.health;

import com.github.kagkarlsson.scheduler.boot.config.DbSchedulerProperties;
import com.zaxxer.hikari.HikariDataSource;
import dev.pushservice.platform.config.PushProperties;
import io.lettuce.core.RedisClient;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Service;

/**
 * Takes health snapshots. The endpoints are public and unlimited, so a snapshot is reused for
 * {@link #MAX_AGE}: a flood of probes costs at most one database ping per second. The job counts
 * read every row of {@code scheduled_tasks} (about 0.5 s per million rows on a busy 2-core box), so
 * they are read at most every {@link #JOBS_MAX_AGE}. Callers arriving while a snapshot is being
 * taken wait for it rather than start another. Thread-safe.
 */
@Service
class HealthService implements DisposableBean {

    static final Duration MAX_AGE = Duration.ofSeconds(1);
    static final Duration JOBS_MAX_AGE = Duration.ofSeconds(5);

    private final DatabaseProbe database;
    private final RedisProbe redis;
    private final List<String> roles;
    private final Clock clock;
    private final ObjectProvider<ProviderCircuits> circuits;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile HealthReport last;
    private volatile long lastTakenNanos;
    private HealthReport.Jobs lastJobs; // guarded by lock
    private long lastJobsNanos;

    HealthService(HikariDataSource dataSource, DbSchedulerProperties scheduler, PushProperties properties,
                  ObjectProvider<RedisClient> redisClient, Clock clock, ObjectProvider<ProviderCircuits> circuits) {
        this.circuits = circuits;
        this.database = new DatabaseProbe(dataSource, scheduler.getTableName());
        RedisClient client = redisClient.getIfAvailable();
        this.redis = client == null ? null : new RedisProbe(client, properties.redisUrl());
        this.roles = properties.roles().stream().sorted().toList();
        this.clock = clock;
    }

    /** The current state, at most {@link #MAX_AGE} old. */
    public HealthReport snapshot() {
        HealthReport cached = fresh();
        if (cached != null) return cached;
        lock.lock();
        try {
            cached = fresh();
            if (cached != null) return cached;
            HealthReport report = take();
            last = report;
            lastTakenNanos = System.nanoTime();
            return report;
        } finally {
            lock.unlock();
        }
    }

    private HealthReport fresh() {
        HealthReport report = last;
        return report != null && System.nanoTime() - lastTakenNanos < MAX_AGE.toNanos() ? report : null;
    }

    private HealthReport take() {
        Instant now = clock.instant();
        HealthReport.Component db = database.ping();
        boolean dbUp = HealthReport.Component.UP.equals(db.status());
        HealthReport.Jobs jobs = null;
        if (dbUp) {
            if (lastJobs == null || System.nanoTime() - lastJobsNanos >= JOBS_MAX_AGE.toNanos()) {
                lastJobs = database.jobs(now);
                lastJobsNanos = System.nanoTime();
            }
            jobs = lastJobs;
        }
        HealthReport.Component redisState = redis == null
                ? new HealthReport.Component(HealthReport.Component.NOT_CONFIGURED, null)
                : redis.check();
        String status;
        if (!dbUp) {
            status = HealthReport.DOWN;
        } else if (HealthReport.Component.DOWN.equals(redisState.status())) {
            status = HealthReport.DEGRADED;
        } else {
            status = HealthReport.OK;
        }
        return new HealthReport(status, now, roles, new HealthReport.Component(HealthReport.Component.UP, null),
                db, redisState, jobs, providerCircuits());
    }

    private List<ProviderCircuits.Circuit> providerCircuits() {
        ProviderCircuits source = circuits.getIfAvailable();
        return source == null ? List.of() : source.notClosed();
    }

    @Override
    public void destroy() {
        database.close();
        if (redis != null) redis.close();
    }
}
