package dev.pushservice.exports;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.json.JsonInput;
import dev.pushservice.platform.json.Uuids;
import dev.pushservice.platform.rules.Timestamps;
import java.time.Instant;
import java.util.UUID;
import tools.jackson.databind.JsonNode;

/**
 * The rules of an export create body ({@code type}, optional {@code from}, {@code to},
 * {@code notification_id}, {@code segment_id}), for every caller ({@code /v1/exports} and the
 * dashboard): every problem in one {@link InvalidInput}. References are checked by {@link ExportService}.
 */
public final class ExportInput {

    private ExportInput() {
    }

    public record Create(ExportType type, ExportFilters filters) {
    }

    public static Create create(JsonNode body) {
        JsonInput in = JsonInput.object(body);
        String rawType = in.requiredString("type", 32);
        ExportType type = null;
        if (rawType != null) {
            type = ExportType.of(rawType).orElse(null);
            if (type == null) in.reject("type", "must be one of " + ExportType.names());
        }
        Instant from = instant(in, "from");
        Instant to = instant(in, "to");
        if (from != null && to != null && !from.isBefore(to)) in.reject("to", "must be after from");
        UUID notificationId = id(in, "notification_id");
        UUID segmentId = id(in, "segment_id");
        in.check();
        return new Create(type, new ExportFilters(from, to, notificationId, segmentId, null));
    }

    private static Instant instant(JsonInput in, String field) {
        String raw = in.string(field, 64);
        if (raw == null) return null;
        Instant at = Timestamps.parseOffset(raw);
        if (at == null) {
            in.reject(field, "must be an ISO 8601 timestamp with a zone offset, " + Timestamps.RANGE
                    + ", such as 2025-05-01T12:00:00Z");
        }
        return at;
    }

    private static UUID id(JsonInput in, String field) {
        String raw = in.string(field, 64);
        if (raw == null) return null;
        UUID id = Uuids.parse(raw);
        if (id == null) in.reject(field, "must be a UUID");
        return id;
    }
}
