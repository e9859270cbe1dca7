package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import java.time.Duration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Makes drafts due: the recurring task {@value #SWEEP} (role {@code scheduler}, see
 * {@code platform/jobs}) asks {@link NotificationService#queueDueDrafts} every second for drafts
 * whose {@code scheduled_at} has come by the application clock; queuing a draft enqueues its fan-out
 * for the workers in the same transaction. Drafts wait in {@code notifications} (partial index by
 * {@code scheduled_at}) whatever runs or not, and rows are taken with {@code FOR UPDATE SKIP LOCKED}.
 *
 * <p>Why a sweep and not a db-scheduler task per draft at its {@code scheduled_at}: db-scheduler
 * keeps its own time base (the system clock), while "due" is the application's clock, which tests
 * move forward; one indexed query a second costs nothing.
 */
@Configuration(proxyBeanMethods = false)
class DueDrafts {

    static final String SWEEP = "notification-due-drafts";
    static final Duration EVERY = Duration.ofSeconds(1);
    /** Drafts queued per transaction. */
    static final int BATCH = 500;

    @Bean
    RecurringTask<Void> notificationDueDraftsSweep(NotificationService notifications) {
        return Tasks.recurring(SWEEP, FixedDelay.of(EVERY)).execute((instance, context) -> {
            while (notifications.queueDueDrafts(BATCH) == BATCH) {
                // more were due than one batch holds
            }
        });
    }
}
