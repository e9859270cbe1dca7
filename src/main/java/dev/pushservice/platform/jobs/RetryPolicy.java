package dev.pushservice.platform.jobs;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How often a failing task is tried and how long it waits in between: exponential backoff from
 * {@code initialBackoff}, doubling per failure up to {@code maxBackoff}, each wait drawn at random
 * from its upper half so that a burst of failures does not retry in lock-step.
 *
 * @param maxAttempts attempts in total, the first one included; at least 1
 * @param initialBackoff wait after the first failure
 * @param maxBackoff longest wait between two attempts
 */
public record RetryPolicy(int maxAttempts, Duration initialBackoff, Duration maxBackoff) {

    public RetryPolicy {
        if (maxAttempts < 1) throw new IllegalArgumentException("maxAttempts must be at least 1");
        if (initialBackoff == null || initialBackoff.isNegative() || initialBackoff.isZero()) {
            throw new IllegalArgumentException("initialBackoff must be positive");
        }
        if (maxBackoff == null || maxBackoff.compareTo(initialBackoff) < 0) {
            throw new IllegalArgumentException("maxBackoff must be at least initialBackoff");
        }
    }

    /** The wait after the {@code failures}-th consecutive failure (1 = the first). */
    public Duration backoffAfter(int failures) {
        long initial = initialBackoff.toMillis();
        long max = maxBackoff.toMillis();
        int doublings = Math.min(Math.max(failures - 1, 0), 40);
        long ceiling = initial > (max >> doublings) ? max : Math.min(max, initial << doublings);
        long floor = ceiling / 2;
        return Duration.ofMillis(floor + ThreadLocalRandom.current().nextLong(ceiling - floor + 1));
    }
}
