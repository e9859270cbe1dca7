package dev.pushservice.notifications;

import java.time.Duration;

/**
 * The limits of a notification request: the spec's "Limits" table plus the ones the project chose
 * (docs/api-decisions.md, "Notifications"). Kept in one place so the parser, the docs and the
 * OpenAPI file can be checked against one list.
 */
final class NotificationLimits {

    static final int NAME = 190;
    static final int TITLE = 250;
    static final int BODY = 4096;
    static final int URL = 2048;
    static final int COLLAPSE_ID = 64;
    static final int SOUND = 100;
    static final int CATEGORY = 100;
    static final int ACTIONS = 3;
    static final int ACTION_ID = 64;
    static final int ACTION_TEXT = 100;
    static final long MAX_TTL = 2_419_200;
    static final int SEGMENT_IDS = 50;
    static final int EXTERNAL_USER_ID = 190;
    static final int TAG_KEY = 128;
    static final int TAG_VALUE = 1024;
    static final int LOCALE = 20;
    static final int LOCALIZATIONS = 100;
    /** {@code data} and {@code template_data}, as compact JSON (the same bound as template data). */
    static final int DATA_BYTES = 16 * 1024;
    static final Duration MAX_SCHEDULE_AHEAD = Duration.ofDays(366);
    /** {@code Idempotency-Key}: 1 to this many visible ASCII characters. */
    static final int IDEMPOTENCY_KEY = 255;

    private NotificationLimits() {
    }
}
