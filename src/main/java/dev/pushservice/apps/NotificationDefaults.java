package dev.pushservice.apps;

import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.Priority;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * An app's notification defaults ({@code notification_defaults} in {@code /v1/app/settings}): what a
 * new notification gets for a field that neither its request nor its template sets. Precedence, per
 * field: request &gt; template &gt; app default &gt; built-in ({@code ttl}: none, the provider's;
 * {@code sound}: none; {@code interruption_level}: {@code active}; {@code priority}: {@code normal}).
 * Applied once, at creation: the stored notification shows the values it got, and a later change of
 * the defaults does not touch it. Each value follows the rule of the notification field it defaults.
 *
 * @param ttl seconds, {@value Limits#TTL_MIN} to {@value Limits#TTL_MAX}, or null for none
 * @param sound 1 to {@value Limits#SOUND} characters, or null for none
 * @param interruptionLevel one of {@link InterruptionLevel#WIRE_VALUES}, or null for none
 * @param priority one of {@link Priority#WIRE_VALUES}, or null for none
 */
public record NotificationDefaults(Integer ttl, String sound, String interruptionLevel, String priority) {

    /** No defaults: the built-in values apply. */
    public static final NotificationDefaults NONE = new NotificationDefaults(null, null, null, null);

    /** The settings field. */
    static final String FIELD = "notification_defaults";
    private static final List<String> KEYS = List.of("ttl", "sound", "interruption_level", "priority");

    /** The defaults stored in an app's settings document (absent or malformed parts count as unset). */
    static NotificationDefaults from(JsonNode settings) {
        JsonNode d = settings.path(FIELD);
        if (!d.isObject()) return NONE;
        JsonNode ttl = d.get("ttl");
        return new NotificationDefaults(ttl != null && ttl.canConvertToInt() ? ttl.intValue() : null, text(d, "sound"),
                text(d, "interruption_level"), text(d, "priority"));
    }

    private static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v != null && v.isString() ? v.stringValue() : null;
    }

    /**
     * Checks the PATCH body's {@code notification_defaults} and applies it to {@code settings} (a copy
     * the caller stores only if the whole body is valid). The field absent: nothing changes;
     * {@code null}: every default is cleared; an object: each key it names changes, {@code null}
     * clearing that one. Keys other than the four are refused: a typo would otherwise do nothing.
     */
    static void update(JsonInput in, ObjectNode settings) {
        JsonInput d = SettingsPatch.object(in, FIELD, settings, KEYS,
                "must be an object with ttl, sound, interruption_level and/or priority (null clears them all)");
        if (d == null) return;
        JsonNode body = d.raw();
        Long ttl = d.integer("ttl", Limits.TTL_MIN, Limits.TTL_MAX);
        String sound = d.text("sound", Limits.SOUND);
        if (sound != null && sound.isBlank()) {
            d.reject("sound", "must not be empty (null clears the default)");
            sound = null;
        }
        String level = oneOf(d, "interruption_level", InterruptionLevel.WIRE_VALUES);
        String priority = oneOf(d, "priority", Priority.WIRE_VALUES);
        ObjectNode current = settings.get(FIELD) instanceof ObjectNode o ? o : settings.putObject(FIELD);
        set(current, body, "ttl", ttl == null ? null : current.numberNode(ttl.intValue()));
        set(current, body, "sound", sound == null ? null : current.stringNode(sound));
        set(current, body, "interruption_level", level == null ? null : current.stringNode(level));
        set(current, body, "priority", priority == null ? null : current.stringNode(priority));
    }

    private static String oneOf(JsonInput in, String field, Set<String> values) {
        String s = in.string(field, 40);
        if (s != null && !values.contains(s)) {
            in.reject(field, "must be one of " + String.join(", ", new TreeSet<>(values)));
            return null;
        }
        return s;
    }

    /** A supplied key: its checked value, or removed when the body says null (or the value was refused: nothing is stored then). */
    private static void set(ObjectNode current, JsonNode body, String key, JsonNode value) {
        if (!body.has(key)) return;
        if (value == null) current.remove(key);
        else current.set(key, value);
    }
}
