package dev.pushservice.platform.rules;

import java.time.LocalTime;
import java.util.regex.Pattern;

/**
 * The one rule for a wall-clock time in requests and settings ({@code local_delivery_time},
 * quiet hours): 24-hour {@code HH:MM}, 00:00 to 23:59, two digits each.
 */
public final class WallClockTimes {

    /** The message for a value that breaks the rule. */
    public static final String RULE = "must be a 24-hour time HH:MM, 00:00 to 23:59";

    private static final Pattern HH_MM = Pattern.compile("([01][0-9]|2[0-3]):[0-5][0-9]");

    private WallClockTimes() {
    }

    public static boolean isValid(String value) {
        return value != null && HH_MM.matcher(value).matches();
    }

    /** The time of a valid value; {@link IllegalArgumentException} for an invalid one. */
    public static LocalTime parse(String value) {
        if (!isValid(value)) throw new IllegalArgumentException("not a wall-clock time HH:MM");
        return LocalTime.of(Integer.parseInt(value.substring(0, 2)), Integer.parseInt(value.substring(3, 5)));
    }
}
