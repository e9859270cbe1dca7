package dev.pushservice.delivery;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Provider circuit breaker settings ({@code push.delivery.breaker.*}, README "Configuration"); see
 * {@link ProviderBreakers}.
 *
 * @param failureThreshold consecutive outage failures (connection failed, timeout, 5xx) of one circuit that open it
 *                         ({@code PUSH_DELIVERY_BREAKER_FAILURE_THRESHOLD}, 5)
 * @param probeInterval wait before the first probe after the circuit opens; doubles after each failed probe
 *                      ({@code PUSH_DELIVERY_BREAKER_PROBE_INTERVAL}, 1s)
 * @param maxProbeInterval ceiling of that wait ({@code PUSH_DELIVERY_BREAKER_MAX_PROBE_INTERVAL}, 60s)
 * @param rateLimitBackoff how long a 429 without {@code Retry-After} pauses the circuit; doubles while 429s
 *                         follow each other, up to {@code max(rateLimitBackoff, maxProbeInterval) · 16}
 *                         ({@code PUSH_DELIVERY_BREAKER_RATE_LIMIT_BACKOFF}, 60s: Google asks FCM senders for
 *                         exponential backoff from at least 60 s)
 * @param priorityRate transactional-priority sends per second one circuit still lets out while a 429 pauses
 *                     it (not while it is open for an outage), so a one-time code is not held behind the bulk
 *                     send that exhausted the quota ({@code PUSH_DELIVERY_BREAKER_PRIORITY_RATE}, 10; 0: none)
 */
@ConfigurationProperties(prefix = "push.delivery.breaker")
public record BreakerProperties(int failureThreshold, Duration probeInterval, Duration maxProbeInterval,
                                Duration rateLimitBackoff, Integer priorityRate) {

    public BreakerProperties {
        if (failureThreshold <= 0) failureThreshold = 5;
        if (probeInterval == null || !probeInterval.isPositive()) probeInterval = Duration.ofSeconds(1);
        if (maxProbeInterval == null || maxProbeInterval.compareTo(probeInterval) < 0) {
            maxProbeInterval = probeInterval.compareTo(Duration.ofSeconds(60)) > 0 ? probeInterval : Duration.ofSeconds(60);
        }
        if (rateLimitBackoff == null || !rateLimitBackoff.isPositive()) rateLimitBackoff = Duration.ofSeconds(60);
        if (priorityRate == null || priorityRate < 0) priorityRate = 10;
    }

    /** Defaults everywhere (tests and tools). */
    public static BreakerProperties defaults() {
        return new BreakerProperties(0, null, null, null, null);
    }
}
