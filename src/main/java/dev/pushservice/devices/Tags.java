package dev.pushservice.devices;

import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.Limits;
import dev.pushservice.platform.rules.TextRules;
import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * Tag rules (spec "Device" and "User"): an object of scalar values; keys use letters, numbers,
 * {@code .}, {@code _}, {@code -}. Values are stored as strings: numbers and booleans as their JSON
 * text, JSON null as the empty string. Limits (ours, in {@link Limits}): keys 1–{@value Limits#TAG_KEY}
 * characters, values up to {@value Limits#TAG_VALUE} characters, at most {@value Limits#TAGS} tags in
 * one object. Tags are stored on the user; the rules live here
 * because registration writes them, and the users and segments features read devices, never the reverse.
 */
public final class Tags {

    private Tags() {
    }

    /** The tags in {@code field}, or null when absent; problems are recorded on {@code in}. */
    public static Map<String, String> read(JsonInput in, String field) {
        JsonNode node = in.value(field);
        if (node == null) return null;
        if (!node.isObject()) {
            in.reject(field, "must be an object of tag keys to scalar values");
            return null;
        }
        if (node.size() > Limits.TAGS) {
            in.reject(field, "must have at most " + Limits.TAGS + " tags");
            return null;
        }
        Map<String, String> tags = new LinkedHashMap<>();
        boolean ok = true;
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            String key = e.getKey();
            String where = field + "." + key;
            if (!TextRules.isKey(key, Limits.TAG_KEY)) {
                in.reject(where.length() > 200 ? field : where,
                        "tag keys must be 1 to " + Limits.TAG_KEY + " " + TextRules.KEY_CHARACTERS);
                ok = false;
                continue;
            }
            JsonNode v = e.getValue();
            String value;
            if (v.isNull()) value = "";
            else if (v.isString()) value = v.stringValue();
            else if (v.isNumber() || v.isBoolean()) value = v.toString();
            else {
                in.reject(where, "tag values must be a string, number, boolean or null");
                ok = false;
                continue;
            }
            if (value.length() > Limits.TAG_VALUE) {
                in.reject(where, "tag values must be at most " + Limits.TAG_VALUE + " characters");
                ok = false;
                continue;
            }
            tags.put(key, value);
        }
        return ok ? tags : null;
    }
}
