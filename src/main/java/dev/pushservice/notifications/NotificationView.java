package dev.pushservice.notifications;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * A notification as the API shows it: the summary (status, timestamps, counts) with the snapshots
 * it was created with. Counts are exact once the notification is terminal; before that they are
 * live.
 *
 * @param targetSegment the segment and version a {@code segment} target snapshotted, else null
 * @param recipientCount null until the fan-out has materialized every recipient
 * @param failedCount recipients that did not reach a provider's acceptance: failed, invalid_token, expired
 * @param counts recipients per state
 * @param platforms per platform: recipients, accepted, failed
 * @param expectedCompletionAt while the notification runs and its recipients' send times are spread
 *                             (throttling, local delivery time, quiet hours): the latest send time
 *                             given to a recipient so far (final once {@code recipientCount} is set); else null
 */
public record NotificationView(UUID notificationId, String name, String status, String priority, String interruptionLevel,
                        JsonNode target, SegmentRef targetSegment, List<SegmentRef> includedSegments, List<SegmentRef> excludedSegments,
                        TemplateRef template, JsonNode content, Integer ttl, String localDeliveryTime,
                        boolean frequencyCapOverride, Instant scheduledAt, Instant createdAt, Instant queuedAt,
                        Instant processingAt, Instant finishedAt, Instant updatedAt, Integer recipientCount,
                        long acceptedCount, long failedCount, Map<String, Long> counts,
                        Map<String, PlatformCounts> platforms, Instant expectedCompletionAt) {

    public record SegmentRef(UUID segmentId, int version) {
    }

    public record TemplateRef(UUID templateId, int version) {
    }

    public record PlatformCounts(long recipients, long accepted, long failed) {
    }

    /** The 202 of a creation; a replay repeats the original with {@code idempotentReplay} true. */
    record Created(UUID notificationId, String status, String interruptionLevel, Instant scheduledAt, Instant createdAt,
                   boolean idempotentReplay) {
    }

    /**
     * @param dueAt when it was due first: its send time with local delivery time, quiet hours and its
     *              throttle slot applied (null for recipients made before these existed)
     * @param expiresAt when its TTL runs out (its own intended send time plus the TTL), or null
     */
    record RecipientView(UUID deviceId, String platform, String externalUserId, String status, int attempts,
                         String lastError, Instant updatedAt, Instant dueAt, Instant expiresAt) {
    }
}
