package dev.pushservice.platform.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pushservice.platform.config.PushProperties;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RetryPolicyTests {

    private final RetryPolicy policy = new RetryPolicy(10, Duration.ofSeconds(2), Duration.ofMinutes(1));

    @Test
    void backoffDoublesWithinTheUpperHalfAndStopsAtTheMaximum() {
        for (int i = 0; i < 200; i++) {
            assertThat(policy.backoffAfter(1)).isBetween(Duration.ofSeconds(1), Duration.ofSeconds(2));
            assertThat(policy.backoffAfter(2)).isBetween(Duration.ofSeconds(2), Duration.ofSeconds(4));
            assertThat(policy.backoffAfter(4)).isBetween(Duration.ofSeconds(8), Duration.ofSeconds(16));
            assertThat(policy.backoffAfter(6)).isBetween(Duration.ofSeconds(30), Duration.ofMinutes(1));
            assertThat(policy.backoffAfter(1000)).isBetween(Duration.ofSeconds(30), Duration.ofMinutes(1));
        }
    }

    @Test
    void backoffIsSpreadNotFixed() {
        assertThat(java.util.stream.IntStream.range(0, 50).mapToObj(i -> policy.backoffAfter(3)).distinct().count())
                .isGreaterThan(10);
    }

    @Test
    void nonsensicalPoliciesAreRefused() {
        assertThatThrownBy(() -> new RetryPolicy(0, Duration.ofSeconds(1), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RetryPolicy(3, Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RetryPolicy(3, Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void longErrorsAreTruncatedForTheDeadLetterTable() {
        String text = DeadLetters.describe(new IllegalStateException("x".repeat(5000)));
        assertThat(text).startsWith("java.lang.IllegalStateException: xxx").hasSize(DeadLetters.MAX_ERROR_LENGTH);
        assertThat(DeadLetters.describe(new RuntimeException())).isEqualTo("java.lang.RuntimeException");
    }

    @Test
    void unknownRoleStopsStartUp() {
        assertThatThrownBy(() -> new PushProperties(null, null, null, null, Set.of("api", "wrker"), 0, null, null, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'wrker'");
        PushProperties fine = new PushProperties(null, null, null, null, Set.of("API", " worker", "scheduler"), 0, null, null, 0);
        assertThat(fine.roles()).containsExactlyInAnyOrder("api", "worker", "scheduler");
        assertThat(new JobsConfiguration().jobInstanceName().value()).contains("#");
    }
}
