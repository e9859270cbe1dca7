package dev.pushservice.events;

import java.util.UUID;

/**
 * Whether a {@code notification_id} in a submitted event names a notification of the caller's app.
 * Implemented by the notifications feature, so events depend on no other feature's tables.
 */
public interface NotificationReferences {

    boolean exists(UUID appId, UUID notificationId);
}
