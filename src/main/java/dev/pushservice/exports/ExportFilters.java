package dev.pushservice.exports;

import java.time.Instant;
import java.util.UUID;

/**
 * What an export selects, stored as JSON with the job (add fields, never rename them). {@code from}
 * (inclusive) and {@code to} (exclusive) bound each type's time column; {@code notificationId} is for
 * recipients; {@code segmentId} and {@code segmentVersion} (the version current at creation) for audience.
 */
public record ExportFilters(Instant from, Instant to, UUID notificationId, UUID segmentId, Integer segmentVersion) {

    static final ExportFilters NONE = new ExportFilters(null, null, null, null, null);
}
