package dev.pushservice.journeys;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The journey execution worker's settings (README "Configuration").
 *
 * @param threads worker threads per instance with the {@code worker} role; each claims its own
 *                batches and holds at most one database connection (of the API's pool) at a time
 * @param pollInterval how often an idle thread looks for due executions (a wake-up after an entry
 *                     or a resume runs it at once; the poll is the safety net and finds timers)
 * @param batchSize executions claimed and run per transaction
 */
@ConfigurationProperties(prefix = "push.journeys.worker")
public record JourneyWorkerProperties(int threads, Duration pollInterval, int batchSize) {

    public JourneyWorkerProperties {
        if (threads <= 0) threads = 1;
        if (pollInterval == null || pollInterval.isZero() || pollInterval.isNegative()) pollInterval = Duration.ofMillis(500);
        if (batchSize <= 0) batchSize = 500;
    }
}
