package dev.pushservice.webhooks;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * The retry schedule and how an attempt's answer is judged. Stateless.
 *
 * <p>Delays after attempt 1, 2, …: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: eight attempts over
 * about 27.6 hours. A 429 or 5xx with {@code Retry-After} waits at least what the endpoint asked
 * (at most {@link #MAX_RETRY_AFTER}): the endpoint may push an attempt later than the schedule,
 * never earlier, so {@code Retry-After: 0} cannot spend the eight attempts in seconds. A 410 is
 * permanent (the endpoint is disabled); every other failure is retried.
 */
final class Schedule {

    static final List<Duration> DELAYS = List.of(Duration.ofSeconds(5), Duration.ofMinutes(5), Duration.ofMinutes(30),
            Duration.ofHours(2), Duration.ofHours(5), Duration.ofHours(10), Duration.ofHours(10));
    static final int MAX_ATTEMPTS = DELAYS.size() + 1;
    static final Duration MAX_RETRY_AFTER = Duration.ofHours(10);

    /** {@code nextAttemptAt} null on a failure: no attempt is left. */
    record Outcome(boolean succeeded, Instant nextAttemptAt, String error, String disableReason) {
    }

    private Schedule() {
    }

    static Outcome judge(WebhookSender.Answer answer, int attemptsMade, Instant now) {
        int status = answer.status();
        if (status >= 200 && status < 300) return new Outcome(true, null, null, null);
        if (status == 410) {
            return new Outcome(false, null, "gone", "the endpoint answered 410 Gone at " + now);
        }
        String error = status == 0 ? answer.error()
                : status >= 300 && status < 400 ? "redirect_not_followed"
                : status == 429 ? "rate_limited"
                : status >= 500 ? "server_error" : "client_error";
        if (attemptsMade >= MAX_ATTEMPTS) return new Outcome(false, null, error, null);
        Duration delay = DELAYS.get(attemptsMade - 1);
        if ((status == 429 || status >= 500) && answer.retryAfter() != null) {
            Duration asked = answer.retryAfter().compareTo(MAX_RETRY_AFTER) > 0 ? MAX_RETRY_AFTER : answer.retryAfter();
            if (asked.compareTo(delay) > 0) delay = asked;
        }
        return new Outcome(false, now.plus(delay), error, null);
    }
}
