package dev.pushservice.notifications;

import dev.pushservice.platform.rules.Limits;
import java.time.Duration;

/**
 * The limits a notification request is checked against: the spec's, from their one home
 * ({@link Limits}), and the few this feature adds (docs/api-decisions.md, "Notifications").
 */
final class NotificationLimits {

    static final int NAME = Limits.NOTIFICATION_NAME;
    static final int TITLE = Limits.TITLE;
    static final int BODY = Limits.BODY;
    static final int URL = Limits.CLICK_URL;
    static final int COLLAPSE_ID = Limits.COLLAPSE_ID;
    static final int SOUND = Limits.SOUND;
    static final int CATEGORY = Limits.CATEGORY;
    static final int ACTIONS = Limits.ACTIONS;
    static final int ACTION_ID = Limits.ACTION_ID;
    static final int ACTION_TEXT = Limits.ACTION_TEXT;
    static final long MAX_TTL = Limits.TTL_MAX;
    static final int SEGMENT_IDS = Limits.SEGMENT_IDS;
    static final int EXTERNAL_USER_ID = Limits.EXTERNAL_USER_ID;
    static final int TAG_KEY = Limits.TAG_KEY;
    static final int TAG_VALUE = Limits.TAG_VALUE;
    static final int LOCALE = Limits.LOCALE;
    /** {@code data} and {@code template_data}, as compact JSON. */
    static final int DATA_BYTES = Limits.DATA_BYTES;

    /** Locales in {@code localizations} (ours). */
    static final int LOCALIZATIONS = 100;
    /** How far ahead {@code scheduled_at} may be (ours). */
    static final Duration MAX_SCHEDULE_AHEAD = Duration.ofDays(366);
    /** {@code Idempotency-Key}: 1 to this many visible ASCII characters (ours). */
    static final int IDEMPOTENCY_KEY = 255;

    private NotificationLimits() {
    }
}
