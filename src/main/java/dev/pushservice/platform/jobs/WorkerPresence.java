package dev.pushservice.platform.jobs;

import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.config.Role;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/**
 * How many worker instances are alive on this database, as this instance last saw it: each instance
 * with the {@code worker} role keeps a row in {@code worker_instances} (V48), written at start and
 * every {@code push.worker-heartbeat-interval} ({@code PUSH_WORKER_HEARTBEAT_INTERVAL}, 5 s), deleted
 * when it stops. A row seen within {@link #ALIVE_HEARTBEATS} heartbeats counts; so a worker killed
 * without stopping drops out of everyone's count within that time. Each heartbeat is one statement
 * on the API pool (upsert of this row, count of the others, deletion of rows dead for an hour), run
 * by its own daemon thread; times are the database's, so instances' clocks need not agree.
 *
 * <p>The delivery engine reads {@link #workers()} to hand a fan-out's own lane only its share of a
 * send (see {@code DeliveryEngine#reserve}). Metered as {@code push_workers_alive}. A heartbeat that
 * fails keeps the last count (and is logged); outside the worker role the count is 1. Thread-safe.
 */
@Component
public class WorkerPresence implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(WorkerPresence.class);

    /** Heartbeats a row may miss and still count as a live worker. */
    static final int ALIVE_HEARTBEATS = 3;
    /** Rows not seen for this long are deleted (a worker killed without stopping). */
    static final Duration FORGET_AFTER = Duration.ofHours(1);

    private final JdbcClient jdbc;
    private final boolean worker;
    private final String name;
    private final Duration interval;
    private volatile int workers = 1;
    private volatile ScheduledExecutorService heartbeat;

    WorkerPresence(JdbcClient jdbc, PushProperties properties, JobsConfiguration.JobInstanceName name,
                   @Value("${push.worker-heartbeat-interval:5s}") Duration interval, ObjectProvider<MeterRegistry> meters) {
        if (interval == null || !interval.isPositive()) {
            throw new IllegalArgumentException("push.worker-heartbeat-interval must be positive");
        }
        this.jdbc = jdbc;
        this.worker = properties.hasRole(Role.WORKER);
        this.name = name.value();
        this.interval = interval;
        MeterRegistry registry = meters.getIfAvailable();
        if (registry != null) {
            Gauge.builder("push.workers.alive", this, WorkerPresence::workers)
                    .description("Worker instances alive on the database, as this instance last saw them").register(registry);
        }
    }

    /** Live worker instances, this one included when it is a worker: at least 1. */
    public int workers() {
        return workers;
    }

    @Override
    public synchronized void start() {
        if (!worker || heartbeat != null) return;
        beat(); // the count is known before the delivery engine's first hand-over
        ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "worker-presence");
            t.setDaemon(true);
            return t;
        });
        long millis = interval.toMillis();
        s.scheduleWithFixedDelay(this::beat, millis, millis, TimeUnit.MILLISECONDS);
        heartbeat = s;
    }

    /** Writes this instance's row and counts the live ones. Never throws. */
    private void beat() {
        try {
            Integer others = jdbc.sql("""
                            with me as (insert into worker_instances (name, started_at, seen_at) values (:name, now(), now())
                                        on conflict (name) do update set seen_at = now() returning name),
                                 gone as (delete from worker_instances where seen_at < now() - cast(:forget as interval))
                            select count(*) from worker_instances
                            where name <> :name and seen_at > now() - cast(:alive as interval)""")
                    .param("name", name).param("forget", FORGET_AFTER.toSeconds() + " seconds")
                    .param("alive", interval.toMillis() * ALIVE_HEARTBEATS + " milliseconds")
                    .query(Integer.class).single();
            int now = others + 1;
            if (now != workers) log.info("Worker instances alive: {} (was {})", now, workers);
            workers = now;
        } catch (RuntimeException e) {
            log.warn("Worker heartbeat failed, keeping the last count ({}): {}", workers, e.toString());
        }
    }

    @Override
    public synchronized void stop() {
        ScheduledExecutorService s = heartbeat;
        if (s == null) return;
        heartbeat = null;
        s.shutdownNow();
        try {
            s.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            jdbc.sql("delete from worker_instances where name = :name").param("name", name).update();
        } catch (RuntimeException e) {
            log.warn("Could not remove this worker's presence row; it drops out of the count within {} heartbeats: {}",
                    ALIVE_HEARTBEATS, e.toString());
        }
        workers = 1;
    }

    @Override
    public boolean isRunning() {
        return heartbeat != null;
    }

    /** Starts before the delivery engine and stops after it. */
    @Override
    public int getPhase() {
        return WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE - 1;
    }
}
