package dev.pushservice.journeys;

import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.config.Role;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * The journey execution worker (role {@code worker}): {@link JourneyWorkerProperties#threads()}
 * platform threads, each running {@link JourneyRunner#runBatch} in a loop. A thread that found a
 * full batch runs the next at once; otherwise it waits for the poll interval or a
 * {@link JourneyWakeup#wake} (an entry or a resume committed), whichever comes first. A failed batch
 * (a database error) is rolled back and logged; the thread waits one poll interval and claims again.
 *
 * <p>Database budget: each thread holds one connection of the API's pool while its batch
 * transaction runs, and none between batches; with the default single thread, the API and
 * notification delivery (its own pool) keep every other connection (docs/architecture.md).
 */
@Component
class JourneyWorker implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(JourneyWorker.class);

    private final ObjectProvider<JourneyRunner> runners;
    private JourneyRunner runner;
    private final JourneyWorkerProperties properties;
    private final boolean enabled;
    private final Object signal = new Object();
    private final List<Thread> threads = new ArrayList<>();
    /** Wake-ups not yet seen by a thread: a wake between a batch and the wait is not lost. */
    private long wakes;
    private volatile boolean running;

    /**
     * The runner (and what it needs: notifications, webhooks and their secrets) is taken only when the
     * worker starts: the admin CLI (lazy, no worker role) never builds it.
     */
    JourneyWorker(ObjectProvider<JourneyRunner> runners, JourneyWorkerProperties properties, PushProperties push,
                  JourneyWakeup wakeup) {
        this.runners = runners;
        this.properties = properties;
        this.enabled = push.hasRole(Role.WORKER);
        if (enabled) wakeup.onWake(this::wake);
    }

    private void wake() {
        synchronized (signal) {
            wakes++;
            signal.notifyAll();
        }
    }

    @Override
    public void start() {
        if (!enabled || running) return;
        runner = runners.getObject();
        running = true;
        for (int i = 0; i < properties.threads(); i++) {
            threads.add(Thread.ofPlatform().name("journey-worker-" + i).daemon().start(this::loop));
        }
        log.info("Journey worker started: {} thread(s), batches of {}, polling every {}", properties.threads(),
                properties.batchSize(), properties.pollInterval());
    }

    /**
     * How often an execution's step may fail while it runs alone before the execution is failed
     * ({@code step_failed}). A transient fault (a lost connection, a deadlock) passes within these
     * attempts; one that comes back every time would otherwise roll back every batch the execution
     * is claimed with, and so stop every journey of every app.
     */
    static final int ATTEMPTS_ALONE = 3;

    /** Failures of executions that failed alone, per execution (this instance's count; bounded). */
    private final Map<UUID, Integer> failedAlone = new ConcurrentHashMap<>();

    /**
     * After a failed batch: a batch of one execution counts a failure against it (and fails it at
     * {@link #ATTEMPTS_ALONE}); a larger batch is run again one execution at a time, so the one that
     * fails is found and the others go on.
     */
    private void isolate(List<UUID> executions) {
        if (executions.size() == 1) {
            UUID id = executions.getFirst();
            int failures = failedAlone.merge(id, 1, Integer::sum);
            if (failures >= ATTEMPTS_ALONE) {
                failedAlone.remove(id);
                try {
                    runner.failAlone(id, "step_failed");
                } catch (RuntimeException e) {
                    log.warn("Journey execution {} could not be marked failed: {}", id, e.toString());
                }
            } else if (failedAlone.size() > 10_000) {
                failedAlone.clear();
            }
            return;
        }
        for (int i = 0; i < executions.size() && running; i++) {
            try {
                runner.runBatch(1);
            } catch (JourneyRunner.BatchFailed e) {
                if (e.executions.isEmpty()) return; // the claim itself failed (the database): the next poll tries again
                isolate(e.executions);
            } catch (RuntimeException e) {
                log.warn("Journey execution run alone failed: {}", e.toString());
                return;
            }
        }
    }

    private void loop() {
        long seen = 0;
        while (running) {
            boolean full;
            try {
                synchronized (signal) {
                    seen = wakes;
                }
                full = runner.runBatch(properties.batchSize()).claimed() >= properties.batchSize();
            } catch (JourneyRunner.BatchFailed e) {
                log.warn("Journey batch of {} execution(s) failed and was rolled back; they run again at a later claim: {}",
                        e.executions.size(), e.getMessage());
                isolate(e.executions);
                full = false;
                seen = -1; // wait a full interval before the next attempt
            } catch (RuntimeException e) {
                log.warn("Journey batch failed and was rolled back; its executions run again at a later claim: {}", e.toString());
                full = false;
                seen = -1;
            }
            if (full) continue;
            try {
                synchronized (signal) {
                    if (running && (seen == -1 || wakes == seen)) signal.wait(properties.pollInterval().toMillis());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public void stop() {
        if (!running) return;
        running = false;
        synchronized (signal) {
            signal.notifyAll();
        }
        for (Thread t : threads) {
            try {
                t.join(Duration.ofSeconds(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        threads.clear();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Stops before the database pool closes and after the web server (as the webhook dispatcher). */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 4096;
    }
}
