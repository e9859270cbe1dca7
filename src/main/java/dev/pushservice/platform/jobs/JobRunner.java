package dev.pushservice.platform.jobs;

import java.util.function.Supplier;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.boot.config.DbSchedulerStarter;
import dev.pushservice.platform.config.Role;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Runs one db-scheduler {@link Scheduler} for one role, in instances that have the role: the
 * {@code worker} one executes queued work from {@code scheduled_tasks}, the {@code scheduler} one
 * runs recurring tasks from {@code recurring_tasks} (see the package documentation). Starts it once
 * the context is refreshed (after Flyway), and on shutdown stops it and releases what it still holds.
 *
 * <p>Shutdown, in the same lifecycle phase as the web server's graceful shutdown, so that HTTP
 * requests and running tasks drain in parallel: db-scheduler stops polling, lets running executions
 * finish for {@code db-scheduler.shutdown-max-wait}, interrupts them and waits that long again.
 * db-scheduler itself leaves an execution that is still running then, or that was fetched but never
 * started, marked picked; other workers would revive it only after its heartbeat goes stale
 * ({@code heartbeat-interval} × {@code missed-heartbeats-limit}). This class instead marks every
 * execution still picked by this process in its table unpicked, so another instance (or this one
 * after a restart) takes it at its next poll. A task interrupted by shutdown counts as one failed attempt.
 *
 * <p>A db-scheduler {@link Scheduler} cannot be started again once stopped, so each start builds a
 * fresh one: the context may be stopped and started again (Spring's test context cache pauses
 * idle contexts; {@code ConfigurableApplicationContext#stop/start} does the same).
 */
public final class JobRunner implements SmartLifecycle, DbSchedulerStarter, DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(JobRunner.class);

    private final Role role;
    private final Supplier<Scheduler> schedulers;
    private volatile Scheduler scheduler;
    private final boolean enabled;
    private final JdbcClient jdbc;
    private final String table;
    private final String name;
    private volatile boolean running;
    private volatile Thread stopping;

    JobRunner(Role role, Supplier<Scheduler> schedulers, boolean enabled, JdbcClient jdbc, String table, String name) {
        this.role = role;
        this.schedulers = schedulers;
        this.enabled = enabled;
        this.jdbc = jdbc;
        this.table = table;
        this.name = name;
    }

    /** The starter's hook; starting happens in {@link #start()}. */
    @Override
    public void doStart() {
        start();
    }

    /**
     * Makes this instance's scheduler look for due executions right after the current transaction
     * commits (at once without one), instead of at its next poll: work enqueued for "now" (an
     * immediate notification's fan-out) starts within milliseconds. A no-op where this instance does
     * not run the worker role; other workers find the work at their next poll.
     */
    public void checkForDueWorkAfterCommit() {
        if (org.springframework.transaction.support.TransactionSynchronizationManager.isSynchronizationActive()) {
            org.springframework.transaction.support.TransactionSynchronizationManager.registerSynchronization(
                    new org.springframework.transaction.support.TransactionSynchronization() {
                        @Override
                        public void afterCommit() {
                            checkForDueWork();
                        }
                    });
        } else {
            checkForDueWork();
        }
    }

    private void checkForDueWork() {
        Scheduler current = scheduler;
        if (current != null) current.triggerCheckForDueExecutions();
    }

    @Override
    public synchronized void start() {
        if (running) return;
        if (!enabled) {
            log.info("Role '{}' not in PUSH_ROLES: {} run on other instances", role.value(), what());
            return;
        }
        scheduler = schedulers.get();
        scheduler.start();
        running = true;
    }

    @Override
    public void stop() {
        if (!running) return;
        running = false;
        scheduler.stop();
        scheduler = null;
        release();
    }

    @Override
    public void stop(Runnable callback) {
        Thread thread = Thread.ofPlatform().name("db-scheduler-shutdown").start(() -> {
            try {
                stop();
            } finally {
                callback.run();
            }
        });
        stopping = thread;
    }

    /** Runs before the DataSource closes: waits for a stop that outlived the lifecycle phase timeout. */
    @Override
    public void destroy() throws InterruptedException {
        Thread thread = stopping;
        if (thread != null) thread.join();
        else stop();
    }

    private void release() {
        try {
            int released = jdbc.sql("update " + table
                            + " set picked = false, picked_by = null, last_heartbeat = null, version = version + 1"
                            + " where picked and picked_by = :name")
                    .param("name", name)
                    .update();
            if (released > 0) {
                log.warn("Released {} unfinished {} execution(s) for other instances", released, role.value());
            }
        } catch (RuntimeException e) {
            log.warn("Could not release unfinished task executions; they are revived once their heartbeat is stale: {}",
                    e.getMessage());
        }
    }

    private String what() {
        return role == Role.WORKER ? "queued background tasks" : "recurring tasks";
    }

    /** The role this runner serves. */
    public Role role() {
        return role;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE;
    }
}
