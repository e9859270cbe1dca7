package dev.pushservice.events;

import dev.pushservice.platform.auth.ApiPrincipal;
import dev.pushservice.platform.auth.Authorize;
import dev.pushservice.platform.auth.Scope;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.rules.EventNames;
import dev.pushservice.platform.rules.Limits;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.UUID;
import java.util.stream.Collectors;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code POST /v1/events}: validates an event, submits it through {@link EventService} and answers
 * 202 once it is committed. Public client keys may submit (SDKs report receipts and opens).
 */
@RestController
class EventController {

    static final Duration MAX_FUTURE = Duration.ofMinutes(5);
    static final Duration MAX_AGE = Duration.ofDays(30);
    private static final String TYPES = Arrays.stream(EventType.values()).map(EventType::value).collect(Collectors.joining(", "));

    private final EventService events;
    private final JsonMapper json;
    private final Clock clock;

    EventController(EventService events, JsonMapper json, Clock clock) {
        this.events = events;
        this.json = json;
        this.clock = clock;
    }

    record EventAccepted(UUID eventId) {
    }

    @PostMapping("/v1/events")
    @Authorize(value = Scope.EVENTS_WRITE, publicKeyAllowed = true)
    ResponseEntity<EventAccepted> submit(ApiPrincipal caller, @RequestBody JsonNode body) {
        NewEvent event = read(caller, JsonInput.object(body), clock.instant());
        events.submit(event);
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(new EventAccepted(event.id()));
    }

    private NewEvent read(ApiPrincipal caller, JsonInput in, Instant now) {
        EventType type = null;
        String typeValue = in.requiredString("event_type", 40);
        if (typeValue != null) {
            type = EventType.fromValue(typeValue).orElse(null);
            if (type == null) in.reject("event_type", "must be one of " + TYPES + " (the list is closed; use custom with an event_name)");
        }
        String name = in.string("event_name", Limits.EVENT_NAME);
        if (name != null && !EventNames.isValid(name)) {
            in.reject("event_name", EventNames.RULE);
            name = null;
        }
        if (type != null && type.named() && in.value("event_name") == null) {
            in.reject("event_name", "is required for custom and outcome events");
        } else if (type != null && !type.named() && in.value("event_name") != null) {
            in.reject("event_name", "is only allowed for custom and outcome events");
        }
        UUID notificationId = uuid(in, "notification_id");
        UUID deviceId = uuid(in, "device_id");
        String metadata = metadata(in);
        Instant occurredAt = occurredAt(in, now);
        in.check();
        Instant receivedAt = now.truncatedTo(ChronoUnit.MICROS);
        return new NewEvent(UUID.randomUUID(), caller.appId(), type, name, deviceId, notificationId, metadata,
                occurredAt == null ? receivedAt : occurredAt, receivedAt);
    }

    private static UUID uuid(JsonInput in, String field) {
        String raw = in.string(field, 36);
        if (raw == null) return null;
        try {
            if (raw.length() == 36) return UUID.fromString(raw);
        } catch (IllegalArgumentException ignored) {
            // rejected below
        }
        in.reject(field, "must be a UUID");
        return null;
    }

    /** Compact JSON text of the metadata object, or null when absent. */
    private String metadata(JsonInput in) {
        JsonNode value = in.value("metadata");
        if (value == null) return null;
        if (!value.isObject()) {
            in.reject("metadata", "must be an object");
            return null;
        }
        String text = json.writeValueAsString(value);
        if (text.getBytes(StandardCharsets.UTF_8).length > Limits.EVENT_METADATA_BYTES) {
            in.reject("metadata", "must be at most " + Limits.EVENT_METADATA_BYTES + " bytes as compact JSON");
            return null;
        }
        return text;
    }

    private static Instant occurredAt(JsonInput in, Instant now) {
        String raw = in.string("occurred_at", 64);
        if (raw == null) return null;
        Instant at;
        try {
            at = OffsetDateTime.parse(raw, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            in.reject("occurred_at", "must be an ISO 8601 timestamp with a zone offset, such as 2025-05-01T12:00:00Z");
            return null;
        }
        if (at.isAfter(now.plus(MAX_FUTURE))) {
            in.reject("occurred_at", "must not be more than 5 minutes in the future");
            return null;
        }
        if (at.isBefore(now.minus(MAX_AGE))) {
            in.reject("occurred_at", "must not be more than 30 days in the past");
            return null;
        }
        return at.truncatedTo(ChronoUnit.MICROS);
    }
}
