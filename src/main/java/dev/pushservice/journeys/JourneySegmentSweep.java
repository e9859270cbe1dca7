package dev.pushservice.journeys;

import com.github.kagkarlsson.scheduler.task.helper.RecurringTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.github.kagkarlsson.scheduler.task.schedule.FixedDelay;
import java.time.Duration;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The recurring task {@value #SWEEP} (role {@code scheduler}, see {@code platform/jobs}): evaluates
 * segment-triggered journeys ({@link JourneyEntries#evaluateSegments}) every
 * {@code push.journeys.segment-entry-interval} (default 60 s, at least 1 s) after the previous run ended.
 * One scheduler instance runs it at a time. A pass evaluates, per journey, the users changed since
 * the previous pass and the next batches of a walk when one is under way, so the interval trades
 * entry delay against the number of (small) statements.
 */
@Configuration(proxyBeanMethods = false)
class JourneySegmentSweep {

    static final String SWEEP = "journey-segment-entries";

    @Bean
    RecurringTask<Void> journeySegmentEntriesSweep(JourneyEntries entries,
                                                   @Value("${push.journeys.segment-entry-interval:60s}") Duration every) {
        if (every.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("push.journeys.segment-entry-interval must be at least 1s");
        }
        return Tasks.recurring(SWEEP, FixedDelay.of(every)).execute((instance, context) -> entries.evaluateSegments());
    }
}
