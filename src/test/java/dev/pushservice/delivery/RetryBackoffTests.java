package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class RetryBackoffTests {

    private static final Instant NOW = Instant.parse("2026-11-24T10:00:00Z");
    private final RetryBackoff backoff = new RetryBackoff(5, Duration.ofSeconds(1), Duration.ofSeconds(10));

    @Test
    void ceilingDoublesFromTheInitialBackoffUpToTheMaximum() {
        assertThat(backoff.ceilingMillis(1)).isEqualTo(1_000);
        assertThat(backoff.ceilingMillis(2)).isEqualTo(2_000);
        assertThat(backoff.ceilingMillis(3)).isEqualTo(4_000);
        assertThat(backoff.ceilingMillis(4)).isEqualTo(8_000);
        assertThat(backoff.ceilingMillis(5)).isEqualTo(10_000);
        assertThat(backoff.ceilingMillis(500)).isEqualTo(10_000);
    }

    @Test
    void fullJitterDrawsAnywhereFromZeroToTheCeiling() {
        assertThat(backoff.after(3, null, NOW, null, ceiling -> 0)).isEqualTo(new RetryBackoff.Retry(NOW));
        assertThat(backoff.after(3, null, NOW, null, ceiling -> ceiling))
                .isEqualTo(new RetryBackoff.Retry(NOW.plusSeconds(4)));
        for (int i = 0; i < 1000; i++) {
            var retry = (RetryBackoff.Retry) backoff.after(2, null, NOW, null);
            assertThat(retry.at()).isBetween(NOW, NOW.plusSeconds(2));
        }
    }

    @Test
    void retryAfterIsAFloorNeverShortened() {
        assertThat(backoff.after(1, Duration.ofSeconds(30), NOW, null, ceiling -> ceiling))
                .isEqualTo(new RetryBackoff.Retry(NOW.plusSeconds(30)));
        assertThat(backoff.after(4, Duration.ofMillis(10), NOW, null, ceiling -> ceiling))
                .isEqualTo(new RetryBackoff.Retry(NOW.plusSeconds(8)));
    }

    @Test
    void givesUpOnceTheMaximumAttemptsAreMade() {
        assertThat(backoff.after(4, null, NOW, null, c -> 0)).isInstanceOf(RetryBackoff.Retry.class);
        assertThat(backoff.after(5, null, NOW, null, c -> 0))
                .isEqualTo(new RetryBackoff.GiveUp(RetryBackoff.MAX_ATTEMPTS));
    }

    @Test
    void givesUpWhenTheRetryWouldComeAfterTheTtl() {
        Instant expires = NOW.plusSeconds(5);
        assertThat(backoff.after(1, null, NOW, expires, c -> c)).isInstanceOf(RetryBackoff.Retry.class);
        assertThat(backoff.after(1, Duration.ofSeconds(5), NOW, expires, c -> c))
                .isEqualTo(new RetryBackoff.GiveUp(RetryBackoff.EXPIRED));
        // TTL 0: deliver now or never
        assertThat(backoff.after(1, null, NOW, NOW, c -> 0)).isEqualTo(new RetryBackoff.GiveUp(RetryBackoff.EXPIRED));
    }

    @Test
    void settingsAreCheckedAtConstruction() {
        assertThatThrownBy(() -> new RetryBackoff(0, Duration.ofSeconds(1), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RetryBackoff(1, Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RetryBackoff(1, Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void defaultsAreDocumentedValues() {
        DeliveryProperties defaults = DeliveryProperties.defaults();
        assertThat(defaults.backoff()).isEqualTo(new RetryBackoff(8, Duration.ofSeconds(1), Duration.ofMinutes(5)));
        int perPlatform = defaults.lanes().values().stream().mapToInt(DeliveryProperties.Lane::inFlight).sum();
        assertThat(perPlatform).as("lane budgets stay below a provider's default in-flight limit").isLessThan(1000);
        assertThat(dev.pushservice.platform.config.PushProperties.Database.MIN_DELIVERY_POOL)
                .isEqualTo(2 * Priority.values().length + 1);
    }
}
