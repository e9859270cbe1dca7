package dev.pushservice.webhooks;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * A webhook as every read shows it: never its secret. {@code disabled_reason} says why the service
 * disabled it (a 410, or failing for longer than {@code PUSH_WEBHOOKS_DISABLE_AFTER}); null otherwise.
 */
public record WebhookView(UUID webhookId, String url, String description, List<String> events, boolean enabled,
                          String disabledReason, Instant createdAt, Instant updatedAt) {

    /** The answer to create and to a rotating PATCH: the only place the secret ever appears. */
    public record WithSecret(UUID webhookId, String url, String description, List<String> events, boolean enabled,
                             String disabledReason, Instant createdAt, Instant updatedAt, String secret) {
    }

    public record Deletion(UUID webhookId, boolean deleted) {
    }

    public record Queued(UUID webhookId, UUID deliveryId, String eventType, String status) {
    }

    /** One delivery and its last attempt; {@code next_attempt_at} only while it is pending. */
    public record Delivery(UUID deliveryId, String eventType, String status, int attempts, Integer lastStatusCode,
                           String lastError, Integer lastLatencyMs, Instant lastAttemptAt, Instant nextAttemptAt,
                           Instant createdAt) {
    }

    public record Deliveries(UUID webhookId, List<Delivery> data) {
    }

    /**
     * A failed attempt of a delivery that was retried (the delivery's last attempt is the delivery itself):
     * {@code statusCode} the endpoint's answer, or null with {@code error} saying why there was none
     * ({@code timeout}, {@code connection_refused}, …); {@code error} is a short code, never a body.
     */
    public record Attempt(int attempt, Instant at, Integer statusCode, String error, Integer latencyMs) {
    }

    WithSecret withSecret(String secret) {
        return new WithSecret(webhookId, url, description, events, enabled, disabledReason, createdAt, updatedAt, secret);
    }
}
