package dev.pushservice.platform.rules;

import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The processing queue of a notification; {@link #TRANSACTIONAL} is served first. The one list for
 * notifications, journeys' push nodes and the delivery lanes.
 */
public enum Priority {
    TRANSACTIONAL, HIGH, NORMAL, BULK;

    /** Every wire value: {@code transactional}, {@code high}, {@code normal}, {@code bulk}. */
    public static final Set<String> WIRE_VALUES = Arrays.stream(values()).map(Priority::value)
            .collect(Collectors.toUnmodifiableSet());

    /** The wire and storage value. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Queue priorities that providers treat as "deliver now" (APNs 10, FCM HIGH, Web Push high). */
    public boolean urgent() {
        return this == TRANSACTIONAL || this == HIGH;
    }
}
