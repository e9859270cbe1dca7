package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.TaskDescriptor;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.pushservice.platform.jobs.DeadLetters;
import dev.pushservice.platform.jobs.RetryPolicy;
import java.time.Clock;
import java.time.Duration;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The background half of cancelling a processing notification: the durable db-scheduler task
 * {@value #TASK_NAME} (one instance per notification, named by its id, role {@code worker}),
 * enqueued by {@link NotificationStates#cancel} in the transaction that marks the notification
 * {@code cancelled} and answers. It makes the notification's {@code pending} recipients
 * {@code cancelled} in batches of {@code push.notifications.cancel-batch} (default
 * {@value #DEFAULT_BATCH}), each one statement in its own short transaction that also gives back
 * their frequency-cap slots ({@link CancelRepository#cancelPendingBatch}); then, with none pending
 * left, finishes the cancel ({@link NotificationStates#finishCancel}): the {@code notification.cancelled}
 * fact (and so its webhooks), and the final counts once nothing is in flight.
 *
 * <p>Nothing waits for it to be sent: from the cancel's commit no lane claims the notification's
 * recipients (the claim reads only processing notifications) and the lanes drop those claimed or
 * handed over before it ({@code DeliveryEngine#cancelled}). A crash mid-way is safe: db-scheduler
 * runs the task again on a live worker and it carries on with what is still pending; a task that
 * was dead-lettered is scheduled again by the reconciler ({@link NotificationReconciler}).
 */
@Component
class NotificationCancels {

    private static final Logger log = LoggerFactory.getLogger(NotificationCancels.class);
    static final String TASK_NAME = "notification-cancel";
    static final TaskDescriptor<Data> TASK = TaskDescriptor.of(TASK_NAME, Data.class);
    static final int DEFAULT_BATCH = 10_000;
    /** How long the task waits for pending rows another transaction holds (a claim this instant) before retrying later. */
    private static final Duration LOCKED_WAIT = Duration.ofSeconds(30);

    /** Task data: JSON in {@code scheduled_tasks}; add fields, never rename or remove them. */
    public record Data(UUID appId, UUID notificationId) {
    }

    private final CancelRepository cancels;
    private final NotificationStates service;
    private final TransactionTemplate transactions;
    private final Clock clock;
    private final int batch;

    NotificationCancels(CancelRepository cancels, NotificationStates service, TransactionTemplate transactions, Clock clock,
                        @Value("${push.notifications.cancel-batch:" + DEFAULT_BATCH + "}") int batch) {
        if (batch < 1) throw new IllegalArgumentException("push.notifications.cancel-batch must be at least 1");
        this.cancels = cancels;
        this.service = service;
        this.transactions = transactions;
        this.clock = clock;
        this.batch = batch;
    }

    /** Cancels what is pending, batch by batch, then finishes the cancel. Safe to run again. */
    void run(Data data) throws InterruptedException {
        UUID app = data.appId();
        UUID id = data.notificationId();
        long cancelled = 0;
        long lockedSince = 0;
        while (true) {
            int n = transactions.execute(status -> cancels.cancelPendingBatch(app, id, batch, clock.instant()));
            if (n == 0) n = transactions.execute(status -> cancels.cancelUnleasedBatch(app, id, batch, clock.instant()));
            cancelled += n;
            if (n > 0) {
                lockedSince = 0;
                continue;
            }
            if (!transactions.execute(status -> cancels.hasPending(id))) break;
            // pending rows held by another transaction (a claim taking them right now): soon sending or back
            if (lockedSince == 0) lockedSince = System.nanoTime();
            if (System.nanoTime() - lockedSince > LOCKED_WAIT.toNanos()) {
                throw new IllegalStateException("pending recipients of notification " + id + " stayed locked for " + LOCKED_WAIT);
            }
            Thread.sleep(50);
        }
        long total = cancelled;
        transactions.executeWithoutResult(status -> service.finishCancel(app, id, total));
        log.info("Notification {}: the cancel's background made {} pending recipient(s) cancelled", id, total);
    }

    /** The task: retried with backoff (a database hiccup), then dead-lettered (the reconciler schedules it again). */
    @Configuration(proxyBeanMethods = false)
    static class CancelTaskConfiguration {

        @Bean
        Task<Data> notificationCancelTask(NotificationCancels cancels, DeadLetters deadLetters) {
            return Tasks.oneTime(TASK)
                    .onFailure(deadLetters.handler(new RetryPolicy(8, Duration.ofSeconds(1), Duration.ofMinutes(5))))
                    .execute((instance, context) -> {
                        try {
                            cancels.run(instance.getData());
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IllegalStateException("interrupted", e);
                        }
                    });
        }
    }
}
