package dev.pushservice.delivery;

import java.time.Duration;
import java.time.Instant;
import java.util.function.LongUnaryOperator;

/**
 * When a recipient whose send failed transiently is tried again, or that it is not.
 *
 * <p>Exponential backoff with full jitter: after the n-th failed attempt the wait is drawn uniformly
 * from {@code [0, min(maxBackoff, initialBackoff · 2^(n-1))]}, so a burst of failures (a provider's
 * 503 to a whole chunk) spreads its retries over the window instead of returning in lock-step. A
 * provider's {@code Retry-After} is a floor: the wait is never shorter. The retry is given up when
 * {@code maxAttempts} sends have been made or when it would come after the notification's TTL ran out
 * (the provider would drop it anyway); the recipient is then dead-lettered, or expired. A failure that
 * says the provider is down ({@link #whileDown}) is retried until the TTL whatever the attempts.
 * Pure and thread-safe.
 *
 * @param maxAttempts sends in total, the first one included; at least 1
 * @param initialBackoff ceiling of the wait after the first failure
 * @param maxBackoff ceiling of every wait
 */
public record RetryBackoff(int maxAttempts, Duration initialBackoff, Duration maxBackoff) {

    public RetryBackoff {
        if (maxAttempts < 1) throw new IllegalArgumentException("maxAttempts must be at least 1");
        if (initialBackoff == null || !initialBackoff.isPositive()) throw new IllegalArgumentException("initialBackoff must be positive");
        if (maxBackoff == null || maxBackoff.compareTo(initialBackoff) < 0) {
            throw new IllegalArgumentException("maxBackoff must be at least initialBackoff");
        }
    }

    /** What to do after a transient failure. */
    public sealed interface Decision {
    }

    /** Send again at {@code at}. */
    public record Retry(Instant at) implements Decision {
    }

    /** Give up: {@code reason} is {@link #MAX_ATTEMPTS} or {@link #EXPIRED}. */
    public record GiveUp(String reason) implements Decision {
    }

    public static final String MAX_ATTEMPTS = "max_attempts_reached";
    public static final String EXPIRED = "ttl_expired";

    /**
     * @param attempts sends made so far, the failed one included (1 after the first failure)
     * @param retryAfter the provider's hint, or null
     * @param expiresAt when the notification's TTL runs out, or null for none
     * @param random given the ceiling in milliseconds, a value in {@code [0, ceiling]}
     */
    public Decision after(int attempts, Duration retryAfter, Instant now, Instant expiresAt, LongUnaryOperator random) {
        if (attempts >= maxAttempts) return new GiveUp(MAX_ATTEMPTS);
        long wait = random.applyAsLong(ceilingMillis(attempts));
        if (retryAfter != null && retryAfter.toMillis() > wait) wait = retryAfter.toMillis();
        Instant at = now.plusMillis(wait);
        if (expiresAt != null && !at.isBefore(expiresAt)) return new GiveUp(EXPIRED);
        return new Retry(at);
    }

    /**
     * As {@link #after(int, Duration, Instant, Instant, LongUnaryOperator)} for a failure that says the
     * provider is down or limits us (connection failed, timeout, 5xx, 429): retried until the TTL runs
     * out, however many attempts were made. An outage is waited out, never counted against
     * {@code maxAttempts} (the circuit breaker keeps such recipients from being sent meanwhile).
     */
    public Decision whileDown(int attempts, Duration retryAfter, Instant now, Instant expiresAt) {
        long wait = java.util.concurrent.ThreadLocalRandom.current().nextLong(ceilingMillis(attempts) + 1);
        if (retryAfter != null && retryAfter.toMillis() > wait) wait = retryAfter.toMillis();
        return notAfter(now.plusMillis(wait), expiresAt);
    }

    /** A retry at {@code at}, or given up as {@link #EXPIRED} when that is not before {@code expiresAt}. */
    public static Decision notAfter(Instant at, Instant expiresAt) {
        if (expiresAt != null && !at.isBefore(expiresAt)) return new GiveUp(EXPIRED);
        return new Retry(at);
    }

    /** As {@link #after(int, Duration, Instant, Instant, LongUnaryOperator)} with a thread-local random draw. */
    public Decision after(int attempts, Duration retryAfter, Instant now, Instant expiresAt) {
        return after(attempts, retryAfter, now, expiresAt,
                ceiling -> java.util.concurrent.ThreadLocalRandom.current().nextLong(ceiling + 1));
    }

    /** The upper bound of the wait after {@code failures} failed attempts (1 = the first). */
    public long ceilingMillis(int failures) {
        long initial = initialBackoff.toMillis();
        long max = maxBackoff.toMillis();
        int doublings = Math.min(Math.max(failures - 1, 0), 62);
        // initial << doublings overflows long for large counts: compare before shifting
        return initial > (max >> doublings) ? max : Math.min(max, initial << doublings);
    }
}
