package dev.pushservice.exports;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import dev.pushservice.audit.AuditLog;
import dev.pushservice.notifications.NotificationService;
import dev.pushservice.platform.domain.Conflict;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.segments.FilterCompiler;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentVersion;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.SequenceInputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Enumeration;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.UUID;
import java.util.zip.GZIPInputStream;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Export jobs: creation (validated, then queued with its task in one transaction), the list, and
 * downloads. The file itself is written by {@link ExportWriter}. An export's status as read is its
 * stored status, except that a completed export past {@code expires_at} (application clock) reads
 * as {@code expired} even before the clean-up task has deleted its file.
 */
@Service
public class ExportService {

    /** How long a completed export's file can be downloaded. */
    static final Duration FILE_LIFE = Duration.ofHours(24);
    /** How many exports the list shows (newest first). */
    static final int LIST_LIMIT = 100;

    private final ExportRepository exports;
    private final SegmentService segments;
    private final NotificationService notifications;
    private final SchedulerClient scheduler;
    private final AuditLog audit;
    private final Clock clock;

    ExportService(ExportRepository exports, SegmentService segments, NotificationService notifications,
                  SchedulerClient scheduler, AuditLog audit, Clock clock) {
        this.exports = exports;
        this.segments = segments;
        this.notifications = notifications;
        this.scheduler = scheduler;
        this.audit = audit;
        this.clock = clock;
    }

    /**
     * Creates a pending export and queues its task. A segment or notification that is not the app's
     * is a 422 naming the field (it is a reference inside the request body), and nothing is queued.
     */
    @Transactional
    public ExportView create(UUID appId, ExportType type, ExportFilters filters) {
        if (filters.segmentId() != null) {
            if (type != ExportType.AUDIENCE) throw InvalidInput.of("segment_id", "only applies to the audience export");
            SegmentVersion version = segments.activeVersion(appId, filters.segmentId(), "segment_id");
            filters = new ExportFilters(filters.from(), filters.to(), null, filters.segmentId(), version.version());
        }
        if (filters.notificationId() != null) {
            if (type != ExportType.RECIPIENT) throw InvalidInput.of("notification_id", "only applies to the recipient export");
            if (!notifications.exists(appId, filters.notificationId())) {
                throw InvalidInput.of("notification_id", "no notification " + filters.notificationId() + " in this app");
            }
        }
        UUID id = UUID.randomUUID();
        Instant now = clock.instant();
        exports.insert(id, appId, type, filters, now);
        scheduler.scheduleIfNotExists(ExportWriter.TASK.instance(id.toString())
                .data(new ExportWriter.Data(appId, id)).scheduledTo(Instant.now()));
        audit.record(appId, "export.create", "export", id, fieldsOf(filters, type));
        return view(exports.find(appId, id).orElseThrow());
    }

    /** One page of the {@value #LIST_LIMIT} newest exports; pages never reach past them. */
    public Page<ExportView> newest(UUID appId, PageRequest page) {
        long remaining = LIST_LIMIT - page.offset();
        if (remaining <= 0) return Page.of(List.of(), page);
        int fetch = (int) Math.min(page.fetchSize(), remaining);
        return Page.of(exports.newest(appId, fetch, page.offset()).stream().map(this::view).toList(), page);
    }

    /** A downloadable export's file, or why not: 404 (not the app's), 409 (not ready, failed or expired). */
    public Download download(UUID appId, UUID id) {
        ExportRepository.Row row = exports.find(appId, id).orElseThrow(() -> new NotFound("no export " + id));
        String status = status(row);
        switch (status) {
            case "pending", "running" -> throw new Conflict("export " + id + " is not ready yet (status " + status
                    + ", " + row.rowCount() + " rows so far); download it once its status is completed");
            case "failed" -> throw new Conflict("export " + id + " failed and has no file: " + row.failureReason()
                    + "; create a new export");
            case "expired" -> throw new Conflict("export " + id + " expired at " + row.expiresAt()
                    + " (files are kept 24 hours after completion); create a new export");
            default -> {
            }
        }
        return new Download(row.id(), row.type().value(), row.chunkCount(), row.storedBytes(), row.sizeBytes());
    }

    /** A completed file: {@link #writeTo} streams it chunk by chunk, as stored (gzip) or decompressed. */
    public final class Download {
        private final UUID id;
        private final String type;
        private final int chunks;
        private final long gzipBytes;
        private final long csvBytes;

        private Download(UUID id, String type, int chunks, long gzipBytes, long csvBytes) {
            this.id = id;
            this.type = type;
            this.chunks = chunks;
            this.gzipBytes = gzipBytes;
            this.csvBytes = csvBytes;
        }

        public String fileName() {
            return "export-" + type + "-" + id + ".csv";
        }

        public long length(boolean gzip) {
            return gzip ? gzipBytes : csvBytes;
        }

        public void writeTo(OutputStream out, boolean gzip) throws IOException {
            if (gzip) {
                for (int seq = 0; seq < chunks; seq++) out.write(chunk(seq));
                return;
            }
            try (InputStream in = new GZIPInputStream(new SequenceInputStream(chunkStreams()), 64 * 1024)) {
                in.transferTo(out);
            }
        }

        private Enumeration<InputStream> chunkStreams() {
            return new Enumeration<>() {
                int next;

                @Override
                public boolean hasMoreElements() {
                    return next < chunks;
                }

                @Override
                public InputStream nextElement() {
                    if (next >= chunks) throw new NoSuchElementException();
                    return new java.io.ByteArrayInputStream(chunk(next++));
                }
            };
        }

        private byte[] chunk(int seq) {
            // the clean-up task may delete an expired file while it is being downloaded: end the response
            return exports.chunk(id, seq).orElseThrow(() -> new IllegalStateException(
                    "export " + id + " file was deleted during the download (expired)"));
        }
    }

    String status(ExportRepository.Row row) {
        if ("completed".equals(row.status()) && !row.expiresAt().isAfter(clock.instant())) return "expired";
        return row.status();
    }

    ExportView view(ExportRepository.Row row) {
        ExportFilters f = row.filters();
        return new ExportView(row.id(), row.type().value(), status(row),
                new ExportView.Filters(f.from(), f.to(), f.notificationId(), f.segmentId()), row.rowCount(),
                row.sizeBytes(), row.failureReason(), row.createdAt(), row.startedAt(), row.completedAt(), row.expiresAt());
    }

    private static List<String> fieldsOf(ExportFilters f, ExportType type) {
        var fields = new java.util.ArrayList<String>();
        fields.add("type");
        if (f.from() != null) fields.add("from");
        if (f.to() != null) fields.add("to");
        if (f.notificationId() != null) fields.add("notification_id");
        if (f.segmentId() != null) fields.add("segment_id");
        return fields;
    }

    /** The compiled segment filter of an audience export (the version current at creation), or null. */
    FilterCompiler.Compiled segmentFilter(UUID appId, ExportFilters f, FilterCompiler compiler) {
        if (f.segmentId() == null) return null;
        SegmentVersion v = segments.version(appId, f.segmentId(), f.segmentVersion())
                .orElseThrow(() -> new IllegalStateException("segment version " + f.segmentId() + "/" + f.segmentVersion() + " is gone"));
        return compiler.compile(appId, v.filter(), "xs");
    }
}
