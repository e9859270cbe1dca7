package dev.pushservice.notifications;

import dev.pushservice.delivery.PlatformOverrides;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.WallClockTimes;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.rules.Locales;
import dev.pushservice.platform.rules.TextRules;
import dev.pushservice.platform.rules.Timestamps;
import dev.pushservice.platform.rules.Urls;
import dev.pushservice.templates.CompiledContent;
import dev.pushservice.templates.TemplateContent;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * A validated {@code POST /v1/notifications} body: every field of the spec's table with its type
 * and limit checked ({@link #read}). What needs the database (target identifiers, segments, the
 * template, title and body after template resolution) is checked by {@link NotificationService}.
 *
 * @param title null when the request leaves it to the template (likewise body, clickUrl, data, interruptionLevel)
 * @param priority null when the request leaves it to the app's default (likewise ttl, sound; see
 *                 {@link dev.pushservice.apps.NotificationDefaults})
 * @param scheduledAt normalized to UTC (microseconds), or null
 * @param hash SHA-256 of the canonical body (known fields, keys sorted, nulls dropped): what an
 *             idempotent retry must repeat
 */
record NotificationRequest(
        String name,
        String title,
        String body,
        String imageUrl,
        String clickUrl,
        JsonNode data,
        ObjectNode localizations,
        UUID templateId,
        JsonNode templateData,
        Target target,
        List<UUID> includedSegmentIds,
        List<UUID> excludedSegmentIds,
        String priority,
        String interruptionLevel,
        Instant scheduledAt,
        Integer ttl,
        String collapseId,
        String sound,
        Integer badge,
        String category,
        ArrayNode actions,
        Boolean contentAvailable,
        boolean frequencyCapOverride,
        String localDeliveryTime,
        ObjectNode platformOverrides,
        byte[] hash) {

    /** {@code target}: one of the five types with its identifier (already checked for form). */
    record Target(String type, UUID deviceId, String externalUserId, String tagKey, String tagValue, UUID segmentId) {

        ObjectNode toJson() {
            ObjectNode node = JsonNodeFactory.instance.objectNode();
            node.put("type", type);
            switch (type) {
                case "device" -> node.put("device_id", deviceId.toString());
                case "user" -> node.put("external_user_id", externalUserId);
                case "tag" -> {
                    node.put("key", tagKey);
                    node.put("value", tagValue);
                }
                case "segment" -> node.put("segment_id", segmentId.toString());
                default -> {
                }
            }
            return node;
        }
    }

    static final Set<String> PRIORITIES = Priority.WIRE_VALUES;
    static final Set<String> LEVELS = InterruptionLevel.WIRE_VALUES;
    static final Set<String> TARGET_TYPES = Set.of("all", "device", "user", "tag", "segment");

    /** The fields of the spec's table: only these count for the idempotency hash. */
    static final Set<String> FIELDS = Set.of("name", "title", "body", "image_url", "click_url", "data", "localizations",
            "template_id", "template_data", "target", "included_segment_ids", "excluded_segment_ids", "priority",
            "interruption_level", "scheduled_at", "ttl", "collapse_id", "sound", "badge", "category", "actions",
            "content_available", "frequency_cap_override", "local_delivery_time", "platform_overrides");

    /** What a {@code localizations} variant may set. */
    static final Set<String> LOCALIZED_FIELDS = Set.of("title", "body", "image_url", "click_url");

    /**
     * Reads the body with every rule that needs no database. Problems are recorded on {@code in};
     * the result is meaningful only when {@code in} has none.
     */
    static NotificationRequest read(JsonInput in, Instant now) {
        String name = name(in);
        String title = text(in, "title", NotificationLimits.TITLE);
        String body = text(in, "body", NotificationLimits.BODY);
        String imageUrl = imageUrl(in, "image_url");
        String clickUrl = clickUrl(in, "click_url");
        JsonNode data = object(in, "data", NotificationLimits.DATA_BYTES);
        ObjectNode localizations = localizations(in);
        UUID templateId = uuid(in, "template_id");
        JsonNode templateData = object(in, "template_data", NotificationLimits.DATA_BYTES);
        Target target = target(in);
        List<UUID> included = segmentIds(in, "included_segment_ids");
        List<UUID> excluded = segmentIds(in, "excluded_segment_ids");
        String priority = oneOf(in, "priority", PRIORITIES);
        String level = oneOf(in, "interruption_level", LEVELS);
        Instant scheduledAt = scheduledAt(in, now);
        Long ttl = in.integer("ttl", 0, NotificationLimits.MAX_TTL);
        String collapseId = optionalText(in, "collapse_id", NotificationLimits.COLLAPSE_ID);
        String sound = optionalText(in, "sound", NotificationLimits.SOUND);
        Long badge = in.integer("badge", 0, Integer.MAX_VALUE);
        String category = optionalText(in, "category", NotificationLimits.CATEGORY);
        ArrayNode actions = actions(in);
        Boolean contentAvailable = in.bool("content_available");
        Boolean capOverride = in.bool("frequency_cap_override");
        String localTime = in.string("local_delivery_time", 5);
        if (localTime != null && !WallClockTimes.isValid(localTime)) {
            in.reject("local_delivery_time", WallClockTimes.RULE);
        }
        ObjectNode overrides = PlatformOverrides.read(in);
        webImages(in, overrides);
        // placeholder syntax of the request's own strings (the template's were checked when saved)
        CompiledContent.compile(new TemplateContent(title, body, clickUrl, data, null), in::reject);
        return new NotificationRequest(name, title, body, imageUrl, clickUrl, data, localizations, templateId,
                templateData, target, included, excluded, priority, level, scheduledAt,
                ttl == null ? null : ttl.intValue(), collapseId, sound, badge == null ? null : badge.intValue(),
                category, actions, contentAvailable, Boolean.TRUE.equals(capOverride), localTime, overrides,
                hash(in.raw()));
    }

    /** Optional; when given, 1 to {@value NotificationLimits#NAME} characters, not blank, no control characters (every name's rule). */
    private static String name(JsonInput in) {
        String s = in.text("name", NotificationLimits.NAME);
        if (s != null && s.isBlank()) {
            in.reject("name", "must not be empty (leave it out for no name)");
            return null;
        }
        return s;
    }

    /** Title or body: not blank; line breaks and tabs allowed, other control characters not (a push shows them as garbage). */
    private static String text(JsonInput in, String field, int max) {
        String s = in.string(field, max);
        if (s != null && s.isBlank()) {
            in.reject(field, "must not be empty (leave it out to use the template's)");
            return null;
        }
        if (s != null && TextRules.hasControlBesidesLineBreaks(s)) {
            in.reject(field, TextRules.NO_CONTROL_BUT_LINE_BREAKS);
            return null;
        }
        return s;
    }

    /** {@code collapse_id}, {@code sound}, {@code category}: identifiers, so not empty and single-line. */
    private static String optionalText(JsonInput in, String field, int max) {
        String s = in.text(field, max);
        if (s != null && s.isBlank()) {
            in.reject(field, "must not be empty (leave it out for none)");
            return null;
        }
        return s;
    }

    private static String clickUrl(JsonInput in, String field) {
        return url(in, field, Urls::clickUrlProblem);
    }

    private static String imageUrl(JsonInput in, String field) {
        return url(in, field, Urls::imageUrlProblem);
    }

    private static String url(JsonInput in, String field, java.util.function.Function<String, String> rule) {
        return in.string(field, NotificationLimits.URL, rule);
    }

    /**
     * The web overrides {@code icon} and {@code badge} are images the browser loads: the image URL
     * rule. {@link PlatformOverrides} has already checked their type and length, and left out those
     * that failed; one that is not https is refused here.
     */
    private static void webImages(JsonInput in, ObjectNode overrides) {
        if (overrides == null || !(overrides.get("web") instanceof ObjectNode web)) return;
        for (String key : List.of("icon", "badge")) {
            JsonNode v = web.get(key);
            String problem = v == null || !v.isString() ? null : Urls.imageUrlProblem(v.stringValue());
            if (problem != null) in.reject("platform_overrides.web." + key, problem);
        }
    }

    private static JsonNode object(JsonInput in, String field, int maxBytes) {
        JsonNode node = in.value(field);
        if (node == null) return null;
        if (!node.isObject()) {
            in.reject(field, "must be an object");
            return null;
        }
        if (node.toString().getBytes(StandardCharsets.UTF_8).length > maxBytes) {
            in.reject(field, "must be at most " + maxBytes + " bytes as JSON");
            return null;
        }
        return node;
    }

    private static UUID uuid(JsonInput in, String field) {
        JsonNode node = in.value(field);
        if (node == null) return null;
        UUID id = node.isString() ? Uuids.parse(node.stringValue()) : null;
        if (id == null) in.reject(field, "must be a UUID");
        return id;
    }

    private static String oneOf(JsonInput in, String field, Set<String> values) {
        String s = in.string(field, 40);
        if (s != null && !values.contains(s)) {
            in.reject(field, "must be one of " + String.join(", ", new java.util.TreeSet<>(values)));
            return null;
        }
        return s;
    }

    private static Target target(JsonInput in) {
        if (in.value("target") == null) {
            in.reject("target", "is required: an object with a type (all, device, user, tag or segment)");
            return null;
        }
        JsonInput t = in.nested("target").orElse(null);
        if (t == null) return null;
        String type = t.requiredString("type", 20);
        if (type == null) return null;
        if (!TARGET_TYPES.contains(type)) {
            t.reject("type", "must be one of all, device, user, tag, segment");
            return null;
        }
        return switch (type) {
            case "device" -> {
                UUID id = requiredUuid(t, "device_id");
                yield id == null ? null : new Target(type, id, null, null, null, null);
            }
            case "user" -> {
                String ext = t.requiredString("external_user_id", NotificationLimits.EXTERNAL_USER_ID);
                if (ext != null && ext.codePoints().anyMatch(Character::isISOControl)) {
                    t.reject("external_user_id", "must not contain control characters");
                    ext = null;
                }
                yield ext == null ? null : new Target(type, null, ext, null, null, null);
            }
            case "tag" -> {
                String key = t.requiredString("key", NotificationLimits.TAG_KEY);
                if (key != null && !TextRules.isKey(key, NotificationLimits.TAG_KEY)) {
                    t.reject("key", "must be 1 to " + NotificationLimits.TAG_KEY + " letters, digits, '.', '_' or '-'");
                    key = null;
                }
                String value = tagValue(t);
                yield key == null || value == null ? null : new Target(type, null, null, key, value, null);
            }
            case "segment" -> {
                UUID id = requiredUuid(t, "segment_id");
                yield id == null ? null : new Target(type, null, null, null, null, id);
            }
            default -> new Target(type, null, null, null, null, null);
        };
    }

    /** Tag values are stored as strings; numbers and booleans match their JSON text, as at registration. */
    private static String tagValue(JsonInput t) {
        JsonNode v = t.value("value");
        if (v == null) {
            t.reject("value", "is required: the tag value to match exactly");
            return null;
        }
        String value;
        if (v.isString()) value = v.stringValue();
        else if (v.isNumber() || v.isBoolean()) value = v.toString();
        else {
            t.reject("value", "must be a string, number or boolean");
            return null;
        }
        if (value.length() > NotificationLimits.TAG_VALUE) {
            t.reject("value", "must be at most " + NotificationLimits.TAG_VALUE + " characters");
            return null;
        }
        return value;
    }

    private static UUID requiredUuid(JsonInput in, String field) {
        if (in.value(field) == null) {
            in.reject(field, "is required");
            return null;
        }
        return uuid(in, field);
    }

    private static List<UUID> segmentIds(JsonInput in, String field) {
        JsonNode node = in.value(field);
        if (node == null) return List.of();
        if (!node.isArray()) {
            in.reject(field, "must be an array of segment ids");
            return List.of();
        }
        if (node.size() > NotificationLimits.SEGMENT_IDS) {
            in.reject(field, "must have at most " + NotificationLimits.SEGMENT_IDS + " entries");
            return List.of();
        }
        Set<UUID> ids = new LinkedHashSet<>();
        for (int i = 0; i < node.size(); i++) {
            JsonNode item = node.get(i);
            UUID id = item.isString() ? Uuids.parse(item.stringValue()) : null;
            if (id == null) in.reject(field + "[" + i + "]", "must be a UUID");
            else ids.add(id);
        }
        return List.copyOf(ids);
    }

    private static Instant scheduledAt(JsonInput in, Instant now) {
        String raw = in.string("scheduled_at", 64);
        if (raw == null) return null;
        Instant at = Timestamps.parseOffset(raw);
        if (at == null) {
            in.reject("scheduled_at", "must be an ISO 8601 timestamp with a time zone offset or Z, " + Timestamps.RANGE
                    + ", such as 2026-05-01T09:00:00+02:00");
            return null;
        }
        if (at.isAfter(now.plus(NotificationLimits.MAX_SCHEDULE_AHEAD))) {
            in.reject("scheduled_at", "must be at most " + NotificationLimits.MAX_SCHEDULE_AHEAD.toDays() + " days ahead");
            return null;
        }
        return at.truncatedTo(ChronoUnit.MICROS);
    }

    private static ArrayNode actions(JsonInput in) {
        JsonNode node = in.value("actions");
        if (node == null) return null;
        if (!node.isArray()) {
            in.reject("actions", "must be an array of objects with id, text and optional icon");
            return null;
        }
        if (node.size() > NotificationLimits.ACTIONS) {
            in.reject("actions", "must have at most " + NotificationLimits.ACTIONS + " entries");
            return null;
        }
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < node.size(); i++) {
            String at = "actions[" + i + "]";
            JsonNode item = node.get(i);
            if (!item.isObject()) {
                in.reject(at, "must be an object with id, text and optional icon");
                continue;
            }
            String id = actionText(in, item, at, "id", NotificationLimits.ACTION_ID, true);
            String text = actionText(in, item, at, "text", NotificationLimits.ACTION_TEXT, true);
            String icon = actionText(in, item, at, "icon", NotificationLimits.URL, false);
            if (id != null && !ids.add(id)) in.reject(at + ".id", "must be unique among the actions");
            ObjectNode action = out.addObject();
            action.put("id", id);
            action.put("text", text);
            if (icon != null) action.put("icon", icon);
        }
        return out;
    }

    private static String actionText(JsonInput in, JsonNode item, String at, String field, int max, boolean required) {
        JsonNode v = item.get(field);
        if (v == null || v.isNull()) {
            if (required) in.reject(at + "." + field, "is required");
            return null;
        }
        if (!v.isString()) {
            in.reject(at + "." + field, "must be a string");
            return null;
        }
        String s = v.stringValue();
        if (s.isBlank() || TextRules.length(s) > max) {
            in.reject(at + "." + field, "must be 1 to " + max + " characters");
            return null;
        }
        return s;
    }

    private static ObjectNode localizations(JsonInput in) {
        JsonNode node = in.value("localizations");
        if (node == null) return null;
        if (!node.isObject()) {
            in.reject("localizations", "must be an object of locale to content variant");
            return null;
        }
        if (node.size() > NotificationLimits.LOCALIZATIONS) {
            in.reject("localizations", "must have at most " + NotificationLimits.LOCALIZATIONS + " locales");
            return null;
        }
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        Map<String, String> normalized = new java.util.HashMap<>();
        for (Map.Entry<String, JsonNode> e : node.properties()) {
            String locale = e.getKey();
            if (locale.length() > NotificationLimits.LOCALE || !Locales.isValid(locale)) {
                in.reject("localizations", "keys must be locales such as en, en-US or pt_BR (at most "
                        + NotificationLimits.LOCALE + " characters); '" + abbreviate(locale) + "' is not one");
                continue;
            }
            String same = normalized.putIfAbsent(Locales.normalize(locale), locale);
            if (same != null) {
                // matching ignores case and '-' versus '_': two such keys would make the choice arbitrary
                in.reject("localizations", "'" + same + "' and '" + locale + "' are the same locale; keep one");
                continue;
            }
            String at = "localizations." + locale;
            if (!e.getValue().isObject()) {
                in.reject(at, "must be an object with title, body, image_url or click_url");
                continue;
            }
            for (Map.Entry<String, JsonNode> f : e.getValue().properties()) {
                // a misspelt field would silently send the default content to everyone of this locale
                if (!LOCALIZED_FIELDS.contains(f.getKey())) {
                    in.reject(at + "." + f.getKey(), "is not localizable; a variant sets title, body, image_url or click_url");
                }
            }
            JsonInput variant = JsonInput.object(e.getValue());
            String title = text(variant, "title", NotificationLimits.TITLE);
            String body = text(variant, "body", NotificationLimits.BODY);
            String image = imageUrl(variant, "image_url");
            String click = clickUrl(variant, "click_url");
            prefixed(in, variant, at);
            if (title == null && body == null && image == null && click == null && !variant.hasErrors()) {
                in.reject(at, "must set at least one of title, body, image_url, click_url");
                continue;
            }
            if (title != null || body != null || click != null) {
                CompiledContent.compile(new TemplateContent(title, body, click, null, null),
                        (field, message) -> in.reject(at + "." + field, message));
            }
            ObjectNode v = out.putObject(locale);
            if (title != null) v.put("title", title);
            if (body != null) v.put("body", body);
            if (image != null) v.put("image_url", image);
            if (click != null) v.put("click_url", click);
        }
        return out;
    }

    /** Copies the problems found on a separately read object into {@code in}, under {@code prefix}. */
    private static void prefixed(JsonInput in, JsonInput part, String prefix) {
        try {
            part.check();
        } catch (InvalidInput e) {
            e.violations().forEach(v -> in.reject(prefix + "." + v.field(), v.message()));
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "…";
    }

    /** SHA-256 of the canonical form of the body's known fields: keys sorted, nulls dropped. */
    static byte[] hash(JsonNode body) {
        StringBuilder out = new StringBuilder();
        TreeMap<String, JsonNode> fields = new TreeMap<>();
        for (Map.Entry<String, JsonNode> e : body.properties()) {
            if (FIELDS.contains(e.getKey()) && !e.getValue().isNull()) fields.put(e.getKey(), e.getValue());
        }
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, JsonNode> e : fields.entrySet()) {
            if (!first) out.append(',');
            first = false;
            out.append(JsonNodeFactory.instance.stringNode(e.getKey())).append(':');
            canonical(e.getValue(), out);
        }
        out.append('}');
        try {
            return MessageDigest.getInstance("SHA-256").digest(out.toString().getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void canonical(JsonNode node, StringBuilder out) {
        if (node.isObject()) {
            TreeMap<String, JsonNode> sorted = new TreeMap<>();
            for (Map.Entry<String, JsonNode> e : node.properties()) {
                if (!e.getValue().isNull()) sorted.put(e.getKey(), e.getValue());
            }
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, JsonNode> e : sorted.entrySet()) {
                if (!first) out.append(',');
                first = false;
                out.append(JsonNodeFactory.instance.stringNode(e.getKey())).append(':');
                canonical(e.getValue(), out);
            }
            out.append('}');
        } else if (node.isArray()) {
            out.append('[');
            List<JsonNode> items = new ArrayList<>();
            node.forEach(items::add);
            for (int i = 0; i < items.size(); i++) {
                if (i > 0) out.append(',');
                canonical(items.get(i), out);
            }
            out.append(']');
        } else {
            out.append(node);
        }
    }
}
