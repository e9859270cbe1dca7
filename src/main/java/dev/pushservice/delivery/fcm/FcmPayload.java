package dev.pushservice.delivery.fcm;

import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.delivery.PlatformOverrides;
import dev.pushservice.delivery.PushMessage;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Builds the FCM HTTP v1 request body ({@code {"message": …}}) for one {@link PushMessage}.
 *
 * <p>Mapping (also in docs/api-decisions.md):
 * <ul>
 * <li>{@code message.token} ← the device token; {@code notification.title/body/image} ← title, body, image_url.</li>
 * <li>{@code data} ← {@code data}, every value a string: strings as they are, any other JSON value as its
 *     JSON text ({@code 3} → {@code "3"}, {@code {"a":1}} → {@code "{\"a\":1}"}, null → {@code "null"});
 *     {@code click_url} is added as {@code data.click_url} (replacing a custom key of that name), because
 *     an Android notification has no URL to open: the app reads it from the tap intent's extras.</li>
 * <li>{@code android.priority} HIGH for the urgent queues (transactional, high) and for time_sensitive and
 *     critical, NORMAL otherwise; a background push is always NORMAL (as APNs never sends one at 10).</li>
 * <li>{@code android.ttl} ← {@code "<ttl>s"}; {@code android.collapse_key} ← collapse_id.</li>
 * <li>{@code android.notification.channel_id} ← interruption level (passive → {@code service_passive},
 *     active → {@code service_active}, time_sensitive → {@code service_time_sensitive}, critical →
 *     {@code service_critical}); {@code notification_priority} LOW / DEFAULT / HIGH / HIGH for pre-channel
 *     Android; {@code click_action} ← category (FCM itself bridges click_action and the APNs category);
 *     {@code sound} ← sound, except at passive, which is quiet; {@code image} ← image_url;
 *     {@code notification_count} ← badge.</li>
 * <li>Background ({@code content_available} without title and body) → a data-only message: no
 *     {@code notification}, no {@code android.notification}.</li>
 * <li>{@code actions} are not sent: FCM notification messages have no action buttons.</li>
 * <li>{@code platform_overrides.android} may set only {@link #ANDROID_OVERRIDES} ({@code channel_id}
 *     replaces the interruption level's channel: the app must have created it); the TTL, token,
 *     content and data cannot be overridden.</li>
 * </ul>
 */
public final class FcmPayload {

    /**
     * What {@code platform_overrides.android} may set ({@link PlatformOverrides}, checked at creation):
     * {@code priority}, {@code collapse_key}, {@code restricted_package_name}, {@code direct_boot_ok} on
     * {@code android}; {@code channel_id}, {@code click_action}, {@code sound}, {@code tag}, {@code color},
     * {@code icon} on {@code android.notification} (not sent for a background push).
     */
    static final Set<String> ANDROID_OVERRIDES = PlatformOverrides.keys("android");

    private static final Set<String> NOTIFICATION_OVERRIDES = Set.of("channel_id", "click_action", "sound", "tag", "color", "icon");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private FcmPayload() {
    }

    static byte[] build(PushMessage m) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode message = root.putObject("message");
        message.put("token", m.token());
        boolean background = m.background();
        if (!background) {
            ObjectNode notification = message.putObject("notification");
            putIfPresent(notification, "title", m.title());
            putIfPresent(notification, "body", m.body());
            putIfPresent(notification, "image", m.imageUrl());
        }
        if (!m.data().isEmpty() || m.clickUrl() != null) {
            ObjectNode data = message.putObject("data");
            for (Map.Entry<String, Object> e : m.data().entrySet()) {
                data.put(e.getKey(), e.getValue() instanceof String s ? s : JSON.writeValueAsString(e.getValue()));
            }
            putIfPresent(data, "click_url", m.clickUrl());
        }
        ObjectNode android = message.putObject("android");
        android.put("priority", highPriority(m) ? "HIGH" : "NORMAL");
        if (m.ttlSeconds() != null) android.put("ttl", m.ttlSeconds() + "s");
        putIfPresent(android, "collapse_key", m.collapseId());
        ObjectNode notification = null;
        if (!background) {
            notification = android.putObject("notification");
            notification.put("channel_id", channel(m.interruptionLevel()));
            notification.put("notification_priority", notificationPriority(m.interruptionLevel()));
            putIfPresent(notification, "click_action", m.category());
            if (m.interruptionLevel() != InterruptionLevel.PASSIVE) putIfPresent(notification, "sound", m.sound());
            putIfPresent(notification, "image", m.imageUrl());
            if (m.badge() != null) notification.put("notification_count", m.badge());
        }
        applyOverrides(m, android, notification);
        return JSON.writeValueAsBytes(root);
    }

    static String channel(InterruptionLevel level) {
        return "service_" + level.value();
    }

    private static boolean highPriority(PushMessage m) {
        if (m.background()) return false;
        return m.priority().urgent()
                || m.interruptionLevel() == InterruptionLevel.TIME_SENSITIVE
                || m.interruptionLevel() == InterruptionLevel.CRITICAL;
    }

    private static String notificationPriority(InterruptionLevel level) {
        return switch (level) {
            case PASSIVE -> "PRIORITY_LOW";
            case ACTIVE -> "PRIORITY_DEFAULT";
            case TIME_SENSITIVE, CRITICAL -> "PRIORITY_HIGH";
        };
    }

    private static void applyOverrides(PushMessage m, ObjectNode android, ObjectNode notification) {
        if (m.platformOverrides() == null) return;
        JsonNode overrides = m.platformOverrides().get("android");
        if (overrides == null || !overrides.isObject()) return;
        for (String key : ANDROID_OVERRIDES) {
            JsonNode value = overrides.get(key);
            if (value == null || value.isNull()) continue;
            if (key.equals("priority")) {
                String p = value.isString() ? value.stringValue().toUpperCase(Locale.ROOT) : "";
                if (p.equals("HIGH") || p.equals("NORMAL")) android.put("priority", p);
            } else if (key.equals("direct_boot_ok")) {
                if (value.isBoolean()) android.put(key, value.booleanValue());
            } else if (value.isString()) {
                if (!NOTIFICATION_OVERRIDES.contains(key)) {
                    android.put(key, value.stringValue());
                } else if (notification != null) {
                    notification.put(key, value.stringValue());
                }
            }
        }
    }

    private static void putIfPresent(ObjectNode node, String field, String value) {
        if (value != null) node.put(field, value);
    }
}
