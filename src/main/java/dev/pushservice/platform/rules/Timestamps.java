package dev.pushservice.platform.rules;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

/**
 * The range of timestamps a request may carry where the value is stored or compared in the
 * database: years 0001 to 9999 (RFC 3339's four-digit years). {@code java.time} parses years up to
 * ±999,999,999, which PostgreSQL's {@code timestamptz} cannot hold: such a value failed the
 * statement that used it (a 500, or a journey batch rolled back at every retry).
 */
public final class Timestamps {

    /** The earliest accepted instant: {@code 0001-01-01T00:00:00Z}. */
    public static final Instant MIN = Instant.parse("0001-01-01T00:00:00Z");
    /** The latest accepted instant: {@code 9999-12-31T23:59:59.999999Z}. */
    public static final Instant MAX = Instant.parse("9999-12-31T23:59:59.999999Z");
    /** Appended to a message when a parseable value is outside the range. */
    public static final String RANGE = "between years 0001 and 9999";

    private Timestamps() {
    }

    /** Whether {@code at} lies in {@link #MIN}..{@link #MAX}. */
    public static boolean inRange(Instant at) {
        return at != null && !at.isBefore(MIN) && !at.isAfter(MAX);
    }

    /**
     * An ISO 8601 timestamp with an offset or {@code Z} ({@link DateTimeFormatter#ISO_OFFSET_DATE_TIME}),
     * in range; null when it does not parse or lies outside {@link #MIN}..{@link #MAX}.
     */
    public static Instant parseOffset(String raw) {
        if (raw == null) return null;
        try {
            Instant at = OffsetDateTime.parse(raw, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
            return inRange(at) ? at : null;
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
