package dev.pushservice.dashboard;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/** How dashboard pages show instants: UTC, to the minute. */
final class DashboardFormat {

    private static final DateTimeFormatter MINUTE = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'").withZone(ZoneOffset.UTC);

    private DashboardFormat() {
    }

    static String minute(Instant instant) {
        return instant == null ? "" : MINUTE.format(instant);
    }
}
