package dev.pushservice.webhooks;

import java.util.List;
import java.util.Set;

/**
 * The event catalogue: every kind an endpoint can subscribe to, in one list (documented in
 * {@code docs/api-decisions.md} "Webhooks" and the {@code WebhookEventKind} schema of the contract).
 * Every kind but {@code webhook.test} is a fact of the {@code lifecycle_events} outbox with the same
 * name. {@code *} subscribes to every kind, including kinds added later.
 */
final class WebhookEvents {

    static final String WILDCARD = "*";
    static final String TEST = "webhook.test";

    /** Subscribable kinds. */
    static final List<String> CATALOGUE = List.of(
            "notification.created",
            "notification.queued",
            "notification.processing",
            "notification.completed",
            "notification.failed",
            "notification.cancelled",
            "device.registered",
            "device.disabled",
            "device.invalidated",
            "user.deleted",
            "event.received",
            "event.confirmed_delivered",
            "event.delivered",
            "event.opened",
            "event.clicked",
            "event.dismissed",
            "event.custom",
            "event.outcome",
            "export.completed",
            "journey.execution.started",
            "journey.execution.completed",
            "journey.execution.failed",
            "journey.execution.cancelled",
            "journey.goal.reached",
            TEST);

    private static final Set<String> KNOWN = Set.copyOf(CATALOGUE);

    static boolean subscribable(String kind) {
        return WILDCARD.equals(kind) || KNOWN.contains(kind);
    }

    private WebhookEvents() {
    }
}
