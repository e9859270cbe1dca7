package dev.pushservice.platform.rules;

import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * How intrusively a notification is presented (spec table "Interruption level presentation"): the
 * one list for templates, notifications and the providers' mapping.
 */
public enum InterruptionLevel {
    PASSIVE, ACTIVE, TIME_SENSITIVE, CRITICAL;

    /** Every wire value: {@code passive}, {@code active}, {@code time_sensitive}, {@code critical}. */
    public static final Set<String> WIRE_VALUES = Arrays.stream(values()).map(InterruptionLevel::value)
            .collect(Collectors.toUnmodifiableSet());

    /** The wire and storage value. */
    public String value() {
        return name().toLowerCase(Locale.ROOT);
    }
}
