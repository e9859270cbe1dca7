package dev.pushservice.platform.rules;

import java.time.Duration;

/**
 * Every size and range limit of the API, each defined once. The first block is the spec's "Limits"
 * table, one constant per row (string limits count UTF-16 characters, as Java and JSON Schema's
 * {@code maxLength} on the BMP do); the second holds the limits the project chose where the spec says
 * nothing, each documented in {@code docs/api-decisions.md}. Validation messages are built from
 * these constants ({@code "must be at most " + Limits.NAME + " characters"}).
 */
public final class Limits {

    // ---- the spec's "Limits" table

    public static final int PUSH_TOKEN = 2048;
    public static final int IDENTITY_TOKEN = 8192;
    public static final int EXTERNAL_USER_ID = 190;
    public static final int APP_VERSION = 50;
    public static final int OS_VERSION = 50;
    public static final int DEVICE_MODEL = 120;
    public static final int LOCALE = 20;
    public static final int TIMEZONE = 64;
    public static final int ALIAS_LABEL = 80;
    public static final int ALIAS_VALUE = 190;
    /** A notification's {@code name}; every other name of the API follows it ({@link #NAME}). */
    public static final int NOTIFICATION_NAME = 190;
    public static final int TITLE = 250;
    public static final int BODY = 4096;
    public static final int IMAGE_URL = 2048;
    public static final int CLICK_URL = 2048;
    public static final int COLLAPSE_ID = 64;
    public static final int SOUND = 100;
    public static final int CATEGORY = 100;
    /** A notification has at most this many {@code actions}. */
    public static final int ACTIONS = 3;
    /** {@code ttl} in seconds: {@value #TTL_MIN} to {@value #TTL_MAX} (28 days). */
    public static final int TTL_MIN = 0;
    public static final int TTL_MAX = 2_419_200;
    /** {@code included_segment_ids} and {@code excluded_segment_ids} hold at most this many UUIDs each. */
    public static final int SEGMENT_IDS = 50;
    /** Filter groups nest at most this deep (a top-level group is level 1). */
    public static final int FILTER_DEPTH = 5;
    /** At most this many conditions in one filter. */
    public static final int FILTER_CONDITIONS = 50;
    /** {@code in} / {@code not_in} take 1 to this many values. */
    public static final int FILTER_LIST_VALUES = 100;
    /** {@code within_days} / {@code not_within_days} take integers 0 to this. */
    public static final int FILTER_DAYS = 3650;
    /** Analytics {@code days}: 1 to this. */
    public static final int ANALYTICS_DAYS = 365;
    /** A journey has 1 to this many nodes. */
    public static final int JOURNEY_NODES = 100;
    public static final int JOURNEY_NODE_ID = 80;
    public static final Duration WAIT_MIN = Duration.ofSeconds(1);
    public static final Duration WAIT_MAX = Duration.ofDays(31);
    /** The weights of a split node total exactly this. */
    public static final int SPLIT_WEIGHT_TOTAL = 100;
    /** {@code reentry_limit} is clamped to 1..this. */
    public static final int REENTRY_LIMIT_MAX = 100;
    /** The export list shows this many newest jobs. */
    public static final int EXPORT_LIST = 100;
    public static final Duration EXPORT_FILE_LIFE = Duration.ofHours(24);

    // ---- the project's own limits (docs/api-decisions.md)

    /**
     * Names of organisations, apps, API keys, segments and templates: the notification name's
     * limit, so a name can move between them (a template's name as a campaign label) unchanged.
     */
    public static final int NAME = NOTIFICATION_NAME;
    /** A segment's description (line breaks allowed). */
    public static final int DESCRIPTION = 1000;
    /** Tag keys: 1 to this many key characters ({@link TextRules#isKey}). */
    public static final int TAG_KEY = 128;
    /** Tag values, and the string values of segment filters (which compare against them). */
    public static final int TAG_VALUE = 1024;
    /** At most this many tags in one {@code tags} object. */
    public static final int TAGS = 200;
    /** A user's {@code properties} object, serialized as JSON, in bytes. */
    public static final int USER_PROPERTIES_BYTES = 64 * 1024;
    /** {@code event_name} of custom and outcome events, wherever it is named ({@link EventNames}). */
    public static final int EVENT_NAME = 100;
    /** An event's {@code metadata} object, compact UTF-8 JSON, in bytes. */
    public static final int EVENT_METADATA_BYTES = 16 * 1024;
    /** A template's or notification's {@code data} object, serialized as JSON, in bytes. */
    public static final int DATA_BYTES = 16 * 1024;
    /** A notification action's {@code id}. */
    public static final int ACTION_ID = 64;
    /** A notification action's {@code text}. */
    public static final int ACTION_TEXT = 100;
    /** A notification action's {@code icon} URL. */
    public static final int ACTION_ICON = 2048;
    /** An app's {@code frequency_cap.limit}: notifications per user and window. */
    public static final int FREQUENCY_CAP_LIMIT_MIN = 1;
    public static final int FREQUENCY_CAP_LIMIT_MAX = 10_000;
    /** An app's {@code frequency_cap.window_seconds}: one minute to 28 days (the longest TTL). */
    public static final int FREQUENCY_CAP_WINDOW_MIN = 60;
    public static final int FREQUENCY_CAP_WINDOW_MAX = TTL_MAX;

    private Limits() {
    }
}
