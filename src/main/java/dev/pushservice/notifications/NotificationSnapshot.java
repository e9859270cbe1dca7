package dev.pushservice.notifications;

import java.time.Instant;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * What a notification sends, as snapshotted at creation: for delivery to render per recipient.
 *
 * @param content the resolved content (request over template): {@code title}, {@code body},
 *                {@code image_url}, {@code click_url}, {@code data}, {@code localizations},
 *                {@code template_data}, {@code collapse_id}, {@code sound}, {@code badge},
 *                {@code category}, {@code actions}, {@code content_available},
 *                {@code platform_overrides}; absent fields left out, placeholders not yet rendered
 * @param ttl seconds, or null for the provider default
 * @param localDeliveryTime {@code HH:MM} or null (stored and validated; not yet applied)
 */
public record NotificationSnapshot(UUID appId, UUID notificationId, String status, String priority,
                                   String interruptionLevel, JsonNode content, Integer ttl, String localDeliveryTime,
                                   boolean frequencyCapOverride, Instant createdAt) {
}
