package dev.pushservice.apps;

import dev.pushservice.platform.json.JsonInput;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * How a PATCH of {@code /v1/app/settings} treats a settings object with a fixed set of keys
 * ({@code notification_defaults}, {@code frequency_cap}): absent, nothing changes; {@code null}
 * removes it; anything but an object is refused; inside it, a key outside the set is refused (a
 * misspelled setting would otherwise silently do nothing).
 */
final class SettingsPatch {

    private SettingsPatch() {
    }

    /**
     * The supplied object of {@code field}, to be applied key by key, or null when there is nothing
     * more to do: the field is absent, {@code null} (then already removed from {@code settings}) or
     * not an object (then refused with {@code notAnObject}).
     */
    static JsonInput object(JsonInput in, String field, ObjectNode settings, List<String> keys, String notAnObject) {
        if (!in.has(field)) return null;
        JsonNode body = in.raw().get(field);
        if (body.isNull()) {
            settings.remove(field);
            return null;
        }
        if (!body.isObject()) {
            in.reject(field, notAnObject);
            return null;
        }
        JsonInput part = in.nested(field).orElseThrow();
        for (String key : body.propertyNames()) {
            if (!keys.contains(key)) part.reject(key, "is not a setting of " + field + "; allowed: " + String.join(", ", keys));
        }
        return part;
    }
}
