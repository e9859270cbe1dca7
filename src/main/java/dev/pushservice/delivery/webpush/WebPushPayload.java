package dev.pushservice.delivery.webpush;

import dev.pushservice.delivery.PushMessage;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The JSON a service worker receives ({@code event.data.json()}) before encryption. Absent values
 * are omitted, never null:
 *
 * <pre>{@code
 * {"v": 1, "notification_id": "…", "device_id": "…", "title": "…", "body": "…", "image": image_url, "url": click_url,
 *  "tag": collapse_id, "interruption_level": "active", "data": {…},
 *  "actions": [{"action": id, "title": text, "icon": icon}]}
 * }</pre>
 *
 * The object in {@code platform_overrides.web} is merged over the top level last: only the keys of
 * {@link dev.pushservice.delivery.PlatformOverrides} ({@code icon}, {@code badge},
 * {@code require_interaction}, {@code renotify}, {@code silent}, {@code tag}), checked at creation.
 * iOS-only fields ({@code sound}, {@code badge} count, {@code category}) are not sent.
 *
 * <p>{@code v} is the payload format's version ({@link #VERSION}; docs/web-sdk.md): the service
 * worker of the web SDK ({@code sdk/web/push-sw.js}) reads exactly these keys. A change that a
 * worker of the current version would misread (a key renamed or its meaning changed) takes a new
 * version; new optional keys do not. {@code device_id} is the recipient device, so the worker can
 * report {@code confirmed_delivered}, {@code opened}, {@code clicked} and {@code dismissed} events
 * for it (the override keys cannot replace {@code v}, {@code notification_id} or {@code device_id}).
 */
final class WebPushPayload {

    /** The payload format's version, sent as {@code v}. */
    static final int VERSION = 1;

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private WebPushPayload() {
    }

    static byte[] encode(PushMessage message) {
        ObjectNode root = JSON.createObjectNode();
        root.put("v", VERSION);
        if (message.notificationId() != null) root.put("notification_id", message.notificationId().toString());
        if (message.deviceId() != null) root.put("device_id", message.deviceId().toString());
        putIfPresent(root, "title", message.title());
        putIfPresent(root, "body", message.body());
        putIfPresent(root, "image", message.imageUrl());
        putIfPresent(root, "url", message.clickUrl());
        putIfPresent(root, "tag", message.collapseId());
        root.put("interruption_level", message.interruptionLevel().value());
        if (!message.data().isEmpty()) {
            root.set("data", JSON.valueToTree(Map.copyOf(message.data())));
        }
        if (!message.actions().isEmpty()) {
            ArrayNode actions = root.putArray("actions");
            for (PushMessage.Action action : message.actions()) {
                ObjectNode a = actions.addObject();
                putIfPresent(a, "action", action.id());
                putIfPresent(a, "title", action.text());
                putIfPresent(a, "icon", action.icon());
            }
        }
        if (message.platformOverrides() != null) {
            JsonNode web = message.platformOverrides().get("web");
            if (web != null && web.isObject()) {
                root.setAll((ObjectNode) web);
            }
        }
        return JSON.writeValueAsBytes(root);
    }

    private static void putIfPresent(ObjectNode node, String name, String value) {
        if (value != null) node.put(name, value);
    }
}
