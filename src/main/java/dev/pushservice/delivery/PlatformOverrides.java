package dev.pushservice.delivery;

import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.TextRules;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The one shape of a notification's {@code platform_overrides}: per platform, the keys an app may
 * set and the kind of each value. The API validates against it at creation ({@link #read}), so an
 * override a provider could not send is a 422 naming its path, never a rejection per device; the
 * payload builders ({@code ApnsPayload}, {@code FcmPayload}, {@code WebPushPayload}) apply exactly
 * these keys. Immutable.
 *
 * <ul>
 *   <li>{@code ios}: {@code subtitle}, {@code sound}, {@code category}, {@code thread_id},
 *       {@code target_content_id} (strings), {@code badge} (integer ≥ 0), {@code relevance_score}
 *       (0–1), {@code mutable_content} (boolean);</li>
 *   <li>{@code android}: {@code channel_id}, {@code priority} ({@code high}/{@code normal}),
 *       {@code collapse_key}, {@code restricted_package_name}, {@code direct_boot_ok} (boolean),
 *       {@code click_action}, {@code sound}, {@code tag}, {@code color} ({@code #RRGGBB}), {@code icon};</li>
 *   <li>{@code web}: {@code icon}, {@code badge} (URLs), {@code require_interaction}, {@code renotify},
 *       {@code silent} (booleans), {@code tag}.</li>
 * </ul>
 */
public final class PlatformOverrides {

    /** What kind of value a key takes. */
    enum Kind { STRING, URL, BOOLEAN, BADGE, SCORE, COLOR, ANDROID_PRIORITY }

    record Key(Kind kind, int max) {
    }

    private static final Pattern COLOR = Pattern.compile("#[0-9A-Fa-f]{6}");

    static final Map<String, Map<String, Key>> SHAPE = Map.of(
            "ios", Map.of(
                    "subtitle", new Key(Kind.STRING, 250),
                    "sound", new Key(Kind.STRING, 100),
                    "category", new Key(Kind.STRING, 100),
                    "thread_id", new Key(Kind.STRING, 64),
                    "target_content_id", new Key(Kind.STRING, 256),
                    "badge", new Key(Kind.BADGE, 0),
                    "relevance_score", new Key(Kind.SCORE, 0),
                    "mutable_content", new Key(Kind.BOOLEAN, 0)),
            "android", Map.ofEntries(
                    Map.entry("channel_id", new Key(Kind.STRING, 100)),
                    Map.entry("priority", new Key(Kind.ANDROID_PRIORITY, 0)),
                    Map.entry("collapse_key", new Key(Kind.STRING, 64)),
                    Map.entry("restricted_package_name", new Key(Kind.STRING, 255)),
                    Map.entry("direct_boot_ok", new Key(Kind.BOOLEAN, 0)),
                    Map.entry("click_action", new Key(Kind.STRING, 100)),
                    Map.entry("sound", new Key(Kind.STRING, 100)),
                    Map.entry("tag", new Key(Kind.STRING, 64)),
                    Map.entry("color", new Key(Kind.COLOR, 0)),
                    Map.entry("icon", new Key(Kind.STRING, 100))),
            "web", Map.of(
                    "icon", new Key(Kind.URL, 2048),
                    "badge", new Key(Kind.URL, 2048),
                    "require_interaction", new Key(Kind.BOOLEAN, 0),
                    "renotify", new Key(Kind.BOOLEAN, 0),
                    "silent", new Key(Kind.BOOLEAN, 0),
                    "tag", new Key(Kind.STRING, 64)));

    private PlatformOverrides() {
    }

    /** The keys {@code platform_overrides.<platform>} may set ({@code ios}, {@code android}, {@code web}). */
    public static Set<String> keys(String platform) {
        return SHAPE.getOrDefault(platform, Map.of()).keySet();
    }

    /**
     * Reads {@code platform_overrides} from {@code in} with every rule; each problem is recorded on
     * {@code in} under its full path ({@code platform_overrides.android.color}). A null value (the
     * platform's or a key's) means "not set". Returns the overrides as stored (only valid keys, no
     * nulls), or null when the field is absent.
     */
    public static ObjectNode read(JsonInput in) {
        String field = "platform_overrides";
        JsonNode node = in.value(field);
        if (node == null) return null;
        if (!node.isObject()) {
            in.reject(field, "must be an object with ios, android and/or web");
            return null;
        }
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            Map<String, Key> keys = SHAPE.get(e.getKey());
            String at = field + "." + e.getKey();
            if (keys == null) {
                in.reject(at, "is not a platform; platform_overrides takes ios, android and web");
                continue;
            }
            if (e.getValue().isNull()) continue;
            if (!e.getValue().isObject()) {
                in.reject(at, "must be an object");
                continue;
            }
            Map<String, JsonNode> valid = new LinkedHashMap<>();
            for (Map.Entry<String, JsonNode> f : e.getValue().properties()) {
                String where = at + "." + f.getKey();
                Key key = keys.get(f.getKey());
                if (key == null) {
                    in.reject(where, "is not an override of " + e.getKey() + "; allowed: "
                            + String.join(", ", new TreeSet<>(keys.keySet())));
                    continue;
                }
                JsonNode v = f.getValue();
                if (v.isNull()) continue;
                String problem = problem(key, v);
                if (problem != null) in.reject(where, problem);
                else valid.put(f.getKey(), v);
            }
            if (!valid.isEmpty()) out.putObject(e.getKey()).setAll(valid);
        }
        return out;
    }

    private static String problem(Key key, JsonNode v) {
        return switch (key.kind()) {
            case STRING -> !v.isString() ? "must be a string"
                    : v.stringValue().isBlank() || TextRules.length(v.stringValue()) > key.max()
                      || TextRules.hasControlBesidesLineBreaks(v.stringValue())
                    ? "must be 1 to " + key.max() + " characters, not blank, without control characters" : null;
            case URL -> !v.isString() ? "must be a string"
                    : v.stringValue().isBlank() || TextRules.length(v.stringValue()) > key.max() || TextRules.hasControl(v.stringValue())
                    ? "must be a URL of 1 to " + key.max() + " characters without control characters" : null;
            case BOOLEAN -> v.isBoolean() ? null : "must be true or false";
            case BADGE -> v.isIntegralNumber() && v.canConvertToInt() && v.intValue() >= 0 ? null
                    : "must be an integer from 0 to " + Integer.MAX_VALUE;
            case SCORE -> v.isNumber() && v.doubleValue() >= 0 && v.doubleValue() <= 1 ? null
                    : "must be a number from 0 to 1";
            case COLOR -> v.isString() && COLOR.matcher(v.stringValue()).matches() ? null : "must be a colour #RRGGBB";
            case ANDROID_PRIORITY -> v.isString() && Set.of("high", "normal").contains(v.stringValue()) ? null
                    : "must be high or normal";
        };
    }
}
