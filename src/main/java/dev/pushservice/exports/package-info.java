/**
 * CSV exports: jobs that write one data type ({@code audience}, {@code message}, {@code recipient},
 * {@code event}, {@code audit}) of one app to a CSV file, stored gzip-compressed in PostgreSQL
 * ({@code export_chunks}) so that every instance can serve it.
 *
 * <h2>States</h2>
 * {@code pending} (created, task queued) → {@code running} (a worker is writing; {@code row_count}
 * shows progress) → {@code completed} (file downloadable until {@code expires_at}, 24 hours later)
 * or {@code failed} (with {@code failure_reason}); a completed export becomes {@code expired} at
 * {@code expires_at}, and the {@code scheduler} role's clean-up then deletes its file.
 *
 * <h2>What must stay true</h2>
 * <ul>
 *   <li>No column ever holds a push token, API key or secret ({@link dev.pushservice.exports.ExportType}).</li>
 *   <li>Nothing holds a whole file in memory: rows stream from a cursor into chunks, and downloads
 *       stream chunk by chunk ({@link dev.pushservice.exports.ExportWriter}).</li>
 *   <li>No export stays {@code running} after its instance dies: the run is revived and retried a
 *       bounded number of times, then failed with a reason.</li>
 *   <li>Every query filters by {@code app_id}; another app's export is a 404 on every route.</li>
 * </ul>
 */
package dev.pushservice.exports;
