package dev.pushservice.webhooks;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** How an attempt's answer is judged and when the next attempt runs. */
class ScheduleTests {

    private static final Instant NOW = Instant.parse("2026-11-24T00:00:00Z");

    private static Schedule.Outcome judge(int status, Duration retryAfter, int attempts) {
        return Schedule.judge(new WebhookSender.Answer(status, retryAfter, status == 0 ? "timeout" : null, 5), attempts, NOW);
    }

    @Test
    void theScheduleSpansAboutADayInEightAttempts() {
        Duration total = Schedule.DELAYS.stream().reduce(Duration.ZERO, Duration::plus);
        assertThat(Schedule.MAX_ATTEMPTS).isEqualTo(8);
        assertThat(total).isBetween(Duration.ofHours(24), Duration.ofHours(30));
        Instant at = NOW;
        for (int attempt = 1; attempt < Schedule.MAX_ATTEMPTS; attempt++) {
            Schedule.Outcome o = judge(500, null, attempt);
            assertThat(o.nextAttemptAt()).isEqualTo(NOW.plus(Schedule.DELAYS.get(attempt - 1)));
        }
        assertThat(judge(500, null, Schedule.MAX_ATTEMPTS).nextAttemptAt()).isNull();
        assertThat(at).isEqualTo(NOW);
    }

    @Test
    void successGoneAndRedirects() {
        assertThat(judge(204, null, 1).succeeded()).isTrue();
        Schedule.Outcome gone = judge(410, null, 1);
        assertThat(gone.succeeded()).isFalse();
        assertThat(gone.nextAttemptAt()).isNull();
        assertThat(gone.disableReason()).contains("410");
        Schedule.Outcome moved = judge(301, null, 1);
        assertThat(moved.error()).isEqualTo("redirect_not_followed");
        assertThat(moved.nextAttemptAt()).isEqualTo(NOW.plusSeconds(5));
    }

    @Test
    void retryAfterIsHonouredOnTooManyRequestsAndServerErrorsOnly() {
        assertThat(judge(429, Duration.ofSeconds(90), 1).nextAttemptAt()).isEqualTo(NOW.plusSeconds(90));
        assertThat(judge(503, Duration.ofHours(1), 3).nextAttemptAt()).isEqualTo(NOW.plus(Duration.ofHours(1)));
        assertThat(judge(503, Duration.ofDays(3), 1).nextAttemptAt()).isEqualTo(NOW.plus(Schedule.MAX_RETRY_AFTER));
        assertThat(judge(400, Duration.ofSeconds(90), 1).nextAttemptAt()).isEqualTo(NOW.plusSeconds(5));
        assertThat(judge(0, null, 2).error()).isEqualTo("timeout");
        assertThat(judge(0, null, 2).nextAttemptAt()).isEqualTo(NOW.plus(Duration.ofMinutes(5)));
    }

    /** An endpoint can ask for a later attempt, never an earlier one: {@code Retry-After: 0} is no shortcut. */
    @Test
    void retryAfterShorterThanTheScheduleWaitsTheSchedule() {
        Instant at = NOW;
        for (int attempt = 1; attempt < Schedule.MAX_ATTEMPTS; attempt++) {
            Schedule.Outcome o = Schedule.judge(new WebhookSender.Answer(503, Duration.ZERO, null, 5), attempt, at);
            assertThat(o.nextAttemptAt()).as("after attempt %s", attempt).isEqualTo(at.plus(Schedule.DELAYS.get(attempt - 1)));
            at = o.nextAttemptAt();
        }
        assertThat(Duration.between(NOW, at)).as("eight attempts of 503 Retry-After: 0 span the whole schedule")
                .isGreaterThan(Duration.ofHours(24));
        assertThat(judge(429, Duration.ofSeconds(2), 3).nextAttemptAt()).isEqualTo(NOW.plus(Duration.ofMinutes(30)));
    }
}
