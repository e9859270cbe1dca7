package dev.pushservice.journeys;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import java.time.Duration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Folds the journey counts: the recurring task {@value #FOLD} (role {@code scheduler}, see
 * {@code platform/jobs}) every {@link #EVERY}. The database keeps each journey's executions per status
 * and goals per node as deltas (V54 {@code journey_execution_counts}, {@code journey_goal_counts}):
 * every statement that starts executions, moves them or records goals adds one grouped row per key,
 * taking no row lock, so event batches and worker batches of one journey never wait for one another on
 * a counter. Those counts, not the rows, answer a journey's stats, so they stay right after retention
 * drops a month of executions (docs/storage.md). A read sums a journey's rows; this task folds them
 * into one row per key ({@link JourneyRepository#foldCounts}), so a read sums a handful. Safe with
 * several instances: a fold skips the rows another holds.
 */
@Configuration(proxyBeanMethods = false)
class JourneyCounts {

    static final String FOLD = "journey-counts-fold";
    static final Duration EVERY = Duration.ofSeconds(30);
    /** Rows of each table folded per statement. */
    static final int BATCH = 10_000;

    @Bean
    RecurringTask<Void> journeyCountsFold(JourneyRepository journeys) {
        return Tasks.recurring(FOLD, FixedDelay.of(EVERY)).execute((instance, context) -> {
            // a full batch may leave more: go on until the statements find less than a batch's worth
            int folded;
            do {
                folded = journeys.foldCounts(BATCH);
            } while (folded >= BATCH);
        });
    }
}
