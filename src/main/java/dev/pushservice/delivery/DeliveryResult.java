package dev.pushservice.delivery;

import java.time.Duration;
import java.time.Instant;

/**
 * What a provider answered for one message. A rejection is permanent and never retried; a
 * failure is transient and retried (honouring {@code retryAfter}) until TTL or max attempts.
 * Treating one as the other is a bug: retrying a rejection hammers the provider, dropping a
 * failure loses a push.
 */
public sealed interface DeliveryResult {

    /** The provider acknowledged the push. {@code providerId}: its message id, if it gives one. */
    record Accepted(String providerId) implements DeliveryResult {
    }

    /**
     * Permanently refused. {@code tokenInvalid}: the device can never receive again with this token
     * (mark it invalidated); {@code invalidatedAt}: when the provider says it became invalid, if it does.
     */
    record Rejected(String reason, boolean tokenInvalid, Instant invalidatedAt) implements DeliveryResult {
    }

    /** Not delivered this time (transport error, 429, 5xx). {@code retryAfter}: the provider's hint, or null. */
    record Failed(String reason, Duration retryAfter) implements DeliveryResult {
    }
}
