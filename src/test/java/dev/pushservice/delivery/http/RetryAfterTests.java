package dev.pushservice.delivery.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The one {@code Retry-After} reading every outgoing call uses (RFC 9110 §10.2.3). */
class RetryAfterTests {

    private static final Instant NOW = Instant.parse("2026-11-24T08:00:00Z");

    @Test
    void deltaSecondsAreTakenAsGiven() {
        assertThat(RetryAfter.parse("120", NOW)).isEqualTo(Duration.ofSeconds(120));
        assertThat(RetryAfter.parse(" 0 ", NOW)).isEqualTo(Duration.ZERO);
    }

    @Test
    void anHttpDateIsTheTimeUntilThen() {
        assertThat(RetryAfter.parse("Tue, 24 Nov 2026 08:01:30 GMT", NOW)).isEqualTo(Duration.ofSeconds(90));
        assertThat(RetryAfter.parse("Tue, 24 Nov 2026 07:00:00 GMT", NOW)).as("a date in the past").isEqualTo(Duration.ZERO);
    }

    @Test
    void absentOrUnreadableIsNoHint() {
        assertThat(RetryAfter.parse(null, NOW)).isNull();
        assertThat(RetryAfter.parse("", NOW)).isNull();
        assertThat(RetryAfter.parse("-5", NOW)).isNull();
        assertThat(RetryAfter.parse("1.5", NOW)).isNull();
        assertThat(RetryAfter.parse("soon", NOW)).isNull();
        assertThat(RetryAfter.parse("99999999999999999999999", NOW)).as("overflow").isNull();
    }
}
