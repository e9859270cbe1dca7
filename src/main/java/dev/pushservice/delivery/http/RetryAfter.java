package dev.pushservice.delivery.http;

import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

/**
 * Reads an HTTP {@code Retry-After} header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
 * The one parser for every outgoing HTTP call (FCM, Web Push, webhooks). Stateless.
 */
public final class RetryAfter {

    private RetryAfter() {
    }

    /**
     * How long to wait: the seconds as given, or the time from {@code now} until the date (zero for a
     * date in the past). Null when the header is absent or unreadable: the caller then uses its own
     * backoff, as if no hint was given.
     */
    public static Duration parse(String header, Instant now) {
        if (header == null) return null;
        String value = header.strip();
        if (value.isEmpty()) return null;
        if (Character.isDigit(value.charAt(0))) {
            for (int i = 1; i < value.length(); i++) {
                if (!Character.isDigit(value.charAt(i))) return null;
            }
            try {
                return Duration.ofSeconds(Long.parseLong(value));
            } catch (NumberFormatException tooLong) {
                return null;
            }
        }
        try {
            Instant at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            return at.isAfter(now) ? Duration.between(now, at) : Duration.ZERO;
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
