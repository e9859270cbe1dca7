package dev.pushservice.notifications;

import dev.pushservice.platform.config.PushProperties;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * Makes drafts due: in {@code worker} instances, one thread asks
 * {@link NotificationService#queueDueDrafts} every {@code push.notifications.due-poll-interval}
 * (1 s) for drafts whose {@code scheduled_at} has come by the application clock. Nothing is lost
 * when no worker runs: drafts wait in {@code notifications} (partial index by {@code scheduled_at})
 * and are queued by the next poll of any worker; concurrent workers skip each other's rows.
 *
 * <p>Why a poll and not a db-scheduler task per draft: db-scheduler keeps its own time base (the
 * system clock), while "due" is the application's clock, which tests move forward; a poll of one
 * indexed query a second costs nothing, and adds no permanent row to {@code scheduled_tasks}.
 */
@Component
class DueDrafts implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(DueDrafts.class);
    /** Drafts queued per transaction. */
    static final int BATCH = 500;

    private final ObjectProvider<NotificationService> service;
    private volatile NotificationService notifications;
    private final boolean worker;
    private final Duration interval;
    private volatile Thread thread;
    private volatile boolean running;

    /** The service is resolved only when polling starts: instances without the worker role (the admin CLI) never build it. */
    DueDrafts(ObjectProvider<NotificationService> notifications, PushProperties properties,
              @Value("${push.notifications.due-poll-interval:1s}") Duration interval) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("push.notifications.due-poll-interval must be positive");
        }
        this.service = notifications;
        this.worker = properties.hasRole("worker");
        this.interval = interval;
    }

    @Override
    public synchronized void start() {
        if (running || !worker) return;
        notifications = service.getObject();
        running = true;
        thread = Thread.ofPlatform().daemon().name("notification-due-drafts").start(this::loop);
    }

    private void loop() {
        while (running) {
            try {
                while (running && notifications.queueDueDrafts(BATCH) == BATCH) {
                    // more were due than one batch holds
                }
            } catch (RuntimeException e) {
                log.warn("Could not queue due notifications; retrying in {}: {}", interval, e.toString());
            }
            try {
                Thread.sleep(interval);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public synchronized void stop() {
        running = false;
        Thread t = thread;
        thread = null;
        if (t != null) {
            t.interrupt();
            try {
                t.join(Duration.ofSeconds(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        // stops before the data source and with the job worker
        return SmartLifecycle.DEFAULT_PHASE - 4096;
    }
}
