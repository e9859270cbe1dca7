package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Platform;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import tools.jackson.databind.node.ObjectNode;

/**
 * One fully rendered notification for one device, ready for a provider. Content is final here:
 * placeholders are resolved and localizations chosen before a message is built.
 *
 * @param appId whose credentials to send with
 * @param deviceId the recipient device (for logs and results; never the token)
 * @param platform which provider must deliver it
 * @param token the provider token: APNs hex token, FCM registration token, or the Web Push
 *              subscription JSON ({@code endpoint}, {@code keys.p256dh}, {@code keys.auth}); never logged
 * @param title null for a background push
 * @param body null for a background push
 * @param data custom application payload (string values are sent as-is; other JSON values per provider rules)
 * @param ttlSeconds how long the provider may hold it; null: provider default
 * @param actions at most 3
 * @param platformOverrides the notification's {@code platform_overrides} (keys {@code ios}, {@code android}, {@code web}), or null
 */
public record PushMessage(
        UUID appId,
        UUID notificationId,
        UUID deviceId,
        Platform platform,
        String token,
        String title,
        String body,
        String imageUrl,
        String clickUrl,
        Map<String, Object> data,
        Integer ttlSeconds,
        String collapseId,
        String sound,
        Integer badge,
        String category,
        List<Action> actions,
        boolean contentAvailable,
        ObjectNode platformOverrides,
        Priority priority,
        InterruptionLevel interruptionLevel) {

    public PushMessage {
        data = data == null ? Map.of() : Map.copyOf(data);
        actions = actions == null ? List.of() : List.copyOf(actions);
        if (priority == null) priority = Priority.NORMAL;
        if (interruptionLevel == null) interruptionLevel = InterruptionLevel.ACTIVE;
    }

    /** A background (silent) push: content-available with neither title nor body. */
    public boolean background() {
        return contentAvailable && title == null && body == null;
    }

    public record Action(String id, String text, String icon) {
    }

    @Override
    public String toString() {
        return "PushMessage[app=" + appId + ", notification=" + notificationId + ", device=" + deviceId
                + ", platform=" + platform + "]";
    }
}
