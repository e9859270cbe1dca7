package dev.pushservice.exports;

import java.time.Instant;
import java.util.UUID;

/**
 * An export as the API shows it.
 *
 * @param status {@code pending}, {@code running}, {@code completed}, {@code failed} or {@code expired}
 * @param rowCount rows written so far while running (progress), the file's rows once completed
 * @param sizeBytes the CSV file's size (uncompressed), once completed
 * @param error why a failed export failed
 * @param expiresAt 24 hours after completion; the file can be downloaded until then
 */
public record ExportView(UUID exportId, String type, String status, Filters filters, long rowCount, Long sizeBytes,
                  String error, Instant createdAt, Instant startedAt, Instant completedAt, Instant expiresAt) {

    /** The filters the export was created with; absent ones are null. */
    public record Filters(Instant from, Instant to, UUID notificationId, UUID segmentId) {
    }
}
