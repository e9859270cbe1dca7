package dev.pushservice.platform.rules;

import java.time.ZoneId;
import java.util.Set;

/**
 * The one rule for time zones in requests, settings and the CLI: an IANA region id from the tz
 * database ({@code Europe/Berlin}, {@code UTC}) of at most {@value Limits#TIMEZONE} characters;
 * numeric offsets are refused because they break with daylight saving time. The id set is read
 * once: {@link ZoneId#getAvailableZoneIds()} copies it on every call, which showed in the
 * registration profile.
 */
public final class TimeZones {

    /** The message for a value that breaks the rule. */
    public static final String RULE = "must be an IANA time zone such as Europe/Berlin";

    private static final Set<String> IDS = Set.copyOf(ZoneId.getAvailableZoneIds());

    private TimeZones() {
    }

    /** Every valid id (the IANA region ids {@code java.time} knows), as an unmodifiable set. */
    public static Set<String> all() {
        return IDS;
    }

    public static boolean isValid(String zone) {
        return zone != null && zone.length() <= Limits.TIMEZONE && IDS.contains(zone);
    }
}
