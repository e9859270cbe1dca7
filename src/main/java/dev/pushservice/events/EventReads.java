package dev.pushservice.events;

import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.time.Instant;
import java.util.UUID;
import org.springframework.stereotype.Service;
import tools.jackson.databind.JsonNode;

/** Stored events, for other features to read (they never read the events tables). Thread-safe. */
@Service
public class EventReads {

    /** Where submitted events come from: {@code POST /v1/events}. */
    static final String SOURCE = "client";

    /**
     * One stored event. {@code source} is {@value #SOURCE} (submitted through {@code POST /v1/events});
     * {@code properties} is the event's {@code metadata} object ({@code {}} when it had none).
     */
    public record EventView(UUID eventId, String eventType, String eventName, String source, UUID deviceId,
                            JsonNode properties, Instant occurredAt) {
    }

    private final EventReadRepository queries;

    EventReads(EventReadRepository queries) {
        this.queries = queries;
    }

    /** The app's events tied to {@code notificationId}, newest first. */
    public Page<EventView> forNotification(UUID appId, UUID notificationId, PageRequest page) {
        return Page.of(queries.forNotification(appId, notificationId, page), page);
    }
}
