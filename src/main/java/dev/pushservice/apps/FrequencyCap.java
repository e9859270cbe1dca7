package dev.pushservice.apps;

import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's frequency cap ({@code frequency_cap} in {@code /v1/app/settings}): at most {@code limit}
 * notifications reach one user (one device, for a device without a user) in any rolling window of
 * {@code windowSeconds}. A notification counts once per user however many of the user's devices it
 * reaches. Notifications with {@code frequency_cap_override} are neither capped nor counted;
 * {@code transactional} ones likewise unless {@code includeTransactional}. Delivery enforces it
 * (the notifications feature's claim step); this record is only the setting.
 *
 * @param limit {@value Limits#FREQUENCY_CAP_LIMIT_MIN} to {@value Limits#FREQUENCY_CAP_LIMIT_MAX}
 * @param windowSeconds {@value Limits#FREQUENCY_CAP_WINDOW_MIN} to {@value Limits#FREQUENCY_CAP_WINDOW_MAX}
 */
public record FrequencyCap(int limit, int windowSeconds, boolean includeTransactional) {

    /** The settings field. */
    static final String FIELD = "frequency_cap";
    private static final List<String> KEYS = List.of("limit", "window_seconds", "include_transactional");

    /** Whether a notification of {@code priority} (wire value) without an override is capped. */
    public boolean appliesTo(String priority) {
        return includeTransactional || !"transactional".equals(priority);
    }

    /** The cap stored in an app's settings document, or null when there is none. */
    static FrequencyCap from(JsonNode settings) {
        JsonNode c = settings.path(FIELD);
        if (!c.isObject() || !c.path("limit").canConvertToInt() || !c.path("window_seconds").canConvertToInt()) return null;
        return new FrequencyCap(c.get("limit").intValue(), c.get("window_seconds").intValue(),
                c.path("include_transactional").asBoolean(false));
    }

    /**
     * Checks the PATCH body's {@code frequency_cap} and applies it to {@code settings} (a copy the
     * caller stores only if the whole body is valid). Absent: nothing changes; {@code null}: the cap
     * is switched off; an object: the keys it names change, and a cap that did not exist needs
     * {@code limit} and {@code window_seconds}. {@code null} for a key, or an unknown key, is refused.
     */
    static void update(JsonInput in, ObjectNode settings) {
        JsonInput c = SettingsPatch.object(in, FIELD, settings, KEYS,
                "must be an object with limit, window_seconds and include_transactional (null switches the cap off)");
        if (c == null) return;
        JsonNode body = c.raw();
        for (String key : body.propertyNames()) {
            if (KEYS.contains(key) && body.get(key).isNull()) c.reject(key, "must not be null (frequency_cap: null switches the cap off)");
        }
        Long limit = c.integer("limit", Limits.FREQUENCY_CAP_LIMIT_MIN, Limits.FREQUENCY_CAP_LIMIT_MAX);
        Long window = c.integer("window_seconds", Limits.FREQUENCY_CAP_WINDOW_MIN, Limits.FREQUENCY_CAP_WINDOW_MAX);
        Boolean include = c.bool("include_transactional");
        boolean exists = from(settings) != null;
        if (!exists && !body.has("limit")) c.reject("limit", "is required to set up a frequency cap");
        if (!exists && !body.has("window_seconds")) c.reject("window_seconds", "is required to set up a frequency cap");
        if (in.hasErrors()) return;
        ObjectNode current = settings.get(FIELD) instanceof ObjectNode o ? o : settings.putObject(FIELD);
        if (limit != null) current.put("limit", limit.intValue());
        if (window != null) current.put("window_seconds", window.intValue());
        if (include != null) current.put("include_transactional", include);
        if (!current.has("include_transactional")) current.put("include_transactional", false);
    }
}
