package dev.pushservice.platform.json;

import java.time.ZoneId;
import java.util.Set;

/**
 * The one rule for time zones in requests, settings and the CLI: an IANA region id from the tz
 * database ({@code Europe/Berlin}, {@code UTC}); numeric offsets are refused because they break with
 * daylight saving time. The id set is read once: {@link ZoneId#getAvailableZoneIds()} copies it on
 * every call, which showed in the registration profile.
 */
public final class TimeZones {

    private static final Set<String> IDS = Set.copyOf(ZoneId.getAvailableZoneIds());

    private TimeZones() {
    }

    public static boolean isValid(String zone) {
        return zone != null && IDS.contains(zone);
    }
}
