package dev.pushservice.apps;

import java.time.LocalTime;
import java.time.ZoneId;

/**
 * The app settings that decide when a notification's recipients become due, as the fan-out reads
 * them once per run.
 *
 * @param defaultZone the zone of a recipient whose device and user have none: the app's {@code timezone}
 * @param quietHours the local-time window in which non-transactional pushes are held, or null
 * @param throttlePerMinute at most this many non-transactional sends per minute for the app, or null (no throttle)
 */
public record DeliveryTiming(ZoneId defaultZone, QuietHours quietHours, Integer throttlePerMinute) {

    /**
     * A daily window of local wall-clock time, {@code start} inclusive, {@code end} exclusive; it
     * crosses midnight when {@code start} is after {@code end} (22:00–07:00). Never empty: the two differ.
     */
    public record QuietHours(LocalTime start, LocalTime end) {

        public QuietHours {
            if (start.equals(end)) throw new IllegalArgumentException("quiet hours need a start and an end that differ");
        }

        /** Whether {@code local} falls in the window. */
        public boolean contains(LocalTime local) {
            return start.isBefore(end)
                    ? !local.isBefore(start) && local.isBefore(end)
                    : !local.isBefore(start) || local.isBefore(end);
        }
    }
}
