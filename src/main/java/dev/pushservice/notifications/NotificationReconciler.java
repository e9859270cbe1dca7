package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import com.github.kagkarlsson.scheduler.SchedulerClient;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The recurring task {@value #SWEEP} (role {@code scheduler}, see {@code platform/jobs}): every
 * {@code push.notifications.reconcile-interval} (default 30 s, at least 1 s) after the previous run
 * ended, finishes notifications whose completion was missed. Completion otherwise happens only in
 * code that runs after a commit (the recording of the last outcomes, the fan-out's last page), so a
 * crash between that commit and the finishing, or a finishing that failed, left a notification
 * {@code processing} for good: no summary, no completed or failed fact, no webhook, and every read
 * counting its rows.
 *
 * <ul>
 *   <li>A processing notification with its recipients all materialized and terminal and no handover
 *       left is finished by {@link NotificationStates#finishIfDone}, as the recording would have:
 *       exact counts, {@code completed} or {@code failed}, its lifecycle fact (and so its webhook).</li>
 *   <li>A cancelled notification cancelled with recipients in flight, none of them in flight any more,
 *       still without its final counts, gets them the same way (reads then stop counting its rows).</li>
 *   <li>A queued or processing notification whose fan-out task was dead-lettered
 *       ({@code dead_letter_jobs}, instance = the notification's id) and is not scheduled again becomes
 *       {@code failed} once what it materialized is delivered ({@link NotificationStates#failFanOut}),
 *       its fact carrying the reason {@value NotificationStates#FANOUT_FAILED}.</li>
 *   <li>A notification still cancelling ({@link NotificationCancels}) whose background task is gone
 *       (dead-lettered after its retries) gets the task scheduled again, so its pending recipients end
 *       cancelled and its fact is recorded.</li>
 *   <li>Before those, the waiting recipients of processing notifications whose TTL has run out are made
 *       {@code expired} ({@code ttl_expired}; {@link RecipientDelivery#expireOverdue}, batches of
 *       {@value RecipientDelivery#OVERDUE_BATCH} until fewer are left), so a notification whose provider is
 *       down completes within an interval of its TTL rather than when the circuit closes.</li>
 * </ul>
 * At most {@value #BATCH} of each per pass (more wait for the next one). Cheap: the
 * lookups read unfinished notifications through partial indexes (V34) and probe the work and
 * handover indexes per notification. Safe with several scheduler instances: db-scheduler runs a
 * recurring task on one instance at a time, and the finishing methods lock the notification and check
 * it again, so finishing one concurrently with delivery's own finishing changes it once. Also retries
 * device invalidations that failed after their recording committed, on instances that deliver.
 */
@Configuration(proxyBeanMethods = false)
class NotificationReconciler {

    private static final Logger log = LoggerFactory.getLogger(NotificationReconciler.class);
    static final String SWEEP = "notification-reconcile";
    static final int BATCH = 100;

    @Bean
    RecurringTask<Void> notificationReconcile(NotificationRepository notifications, NotificationStates service,
                                              ObjectProvider<RecipientDelivery> delivery, Clock clock,
                                              CancelRepository cancels, SchedulerClient scheduler,
                                              @Value("${push.notifications.reconcile-interval:30s}") Duration every) {
        if (every.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("push.notifications.reconcile-interval must be at least 1s");
        }
        return Tasks.recurring(SWEEP, FixedDelay.of(every)).execute((instance, context) -> {
            RecipientDelivery recipients = delivery.getIfAvailable();
            if (recipients != null) {
                recipients.retryInvalidations(clock.instant());
                // recipients whose TTL ran out while nothing claimed them (an open provider circuit)
                try {
                    while (recipients.expireOverdue(clock.instant()) == RecipientDelivery.OVERDUE_BATCH) {
                        // a full batch: more may be waiting
                    }
                } catch (RuntimeException e) {
                    log.warn("Waiting recipients whose TTL ran out could not be expired, trying again at the next pass: {}",
                            e.toString());
                }
            }
            int finished = 0;
            for (NotificationRepository.Unfinished n : notifications.finishedUnmarked(BATCH)) {
                if (reconcile(n, () -> service.finishIfDone(n.appId(), n.id()))) finished++;
            }
            for (NotificationRepository.Unfinished n : notifications.cancelledUncounted(BATCH)) {
                if (reconcile(n, () -> service.finishIfDone(n.appId(), n.id()))) finished++;
            }
            for (CancelRepository.Cancelling c : cancels.cancellingWithoutTask(NotificationCancels.TASK_NAME, BATCH)) {
                scheduler.scheduleIfNotExists(NotificationCancels.TASK.instance(c.id().toString())
                        .data(new NotificationCancels.Data(c.appId(), c.id())).scheduledTo(Instant.now()));
                log.info("Notification {}: its cancel's background task was gone, scheduled again", c.id());
            }
            int failed = 0;
            for (NotificationRepository.Unfinished n : notifications.fanOutDeadLettered(NotificationFanOut.TASK_NAME, BATCH)) {
                if (reconcile(n, () -> service.failFanOut(n.appId(), n.id()))) failed++;
            }
            if (finished + failed > 0) {
                log.info("Reconciled {} notification(s) whose finishing was missed and {} whose fan-out was dead-lettered",
                        finished, failed);
            }
        });
    }

    /** Runs one notification's finishing; a failure is logged and left to the next pass. */
    private static boolean reconcile(NotificationRepository.Unfinished n, Runnable finishing) {
        try {
            finishing.run();
            return true;
        } catch (RuntimeException e) {
            log.warn("Notification {} could not be reconciled, trying again at the next pass: {}", n.id(), e.toString());
            return false;
        }
    }
}
