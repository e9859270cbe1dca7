package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Folds the recipient counts of running notifications: the recurring task {@value #SWEEP} (role
 * {@code scheduler}, see {@code platform/jobs}) every {@link #EVERY}. The database keeps a notification's
 * counts as deltas (V46 {@code notification_counts}, {@code notification_accepted_counts}): every
 * statement that inserts or changes recipient rows adds one grouped row per key its rows moved from or
 * to, in its own transaction, taking no row lock, so the claims and recordings of one send on every
 * lane and instance never wait for one another. A read sums a notification's rows; this task folds
 * them into one row per key ({@link NotificationRepository#foldCounts}), so a read during a send of any
 * size sums a few dozen rows at most. The notifications folded are the few whose counts are read live
 * (queued, processing, cancelled without a summary: partial indexes, V34); a finished one's counts are
 * folded a last time when its summary and report are stored. Safe with several instances: a fold
 * skips the rows another holds.
 */
@Configuration(proxyBeanMethods = false)
class NotificationCounts {

    static final String SWEEP = "notification-counts-fold";
    static final Duration EVERY = Duration.ofSeconds(2);
    /** Notifications folded per statement. */
    static final int BATCH = 200;

    @Bean
    RecurringTask<Void> notificationCountsFold(NotificationRepository notifications) {
        return Tasks.recurring(SWEEP, FixedDelay.of(EVERY)).execute((instance, context) -> {
            List<UUID> live = notifications.countedLive();
            for (int i = 0; i < live.size(); i += BATCH) {
                notifications.foldCounts(live.subList(i, Math.min(live.size(), i + BATCH)));
            }
        });
    }
}
