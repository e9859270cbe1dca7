package dev.pushservice.events;

import java.time.Instant;
import java.util.UUID;

/**
 * A validated event waiting to be written. {@code metadata} is compact JSON text or null;
 * {@code occurredAt} is truncated to microseconds (what PostgreSQL stores).
 */
record NewEvent(UUID id, UUID appId, EventType type, String name, UUID deviceId, UUID notificationId,
                String metadata, Instant occurredAt, Instant receivedAt) {

    /**
     * The {@code device_event_last} key: the type, or {@code custom:<name>} for custom events
     * (what segment filters {@code event.<type>} and {@code custom_event.<name>} look up).
     */
    String eventKey() {
        return type == EventType.CUSTOM ? "custom:" + name : type.value();
    }
}
