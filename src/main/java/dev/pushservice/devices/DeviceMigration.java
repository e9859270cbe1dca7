package dev.pushservice.devices;

import dev.pushservice.audit.AuditLog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.json.JsonMapper;

/**
 * Migration upload (spec "Device", migration rules; docs/dashboard.md "Migration upload"): stages a
 * previous provider's devices from a CSV file so that registrations claim them
 * ({@link DeviceService}, {@code register_device}).
 *
 * <p>Two passes, both streaming from disk, so memory does not grow with the file. The first reads
 * the CSV, validates every row and changes nothing: a problem with the file refuses it; the valid
 * rows, their tokens already replaced by hashes, are written to a second temporary file in
 * {@code COPY}'s format. The second runs in one transaction: it
 * streams that file into a temporary table with {@code COPY}, finds rows repeated in the file,
 * tokens already registered or staged, and ownership conflicts with set-based statements, and, unless
 * there is a conflict (then it rolls back: no row changes), copies the rest into
 * {@code migration_staged_devices} with one {@code INSERT ... SELECT}, with the import-history row and
 * the audit entry. Only the SHA-256 identity hash of a token (the one registration matches on) is ever
 * sent to the database. Uploads run one at a time (a transaction-level advisory lock), so the
 * conflict checks see every other upload's records. The SQL is {@link MigrationRepository}'s.
 */
@Service
public class DeviceMigration {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(DeviceMigration.class);

    /** How many skipped rows (and conflicts) are kept with their line numbers. */
    public static final int SAMPLES = 100;

    private static final Pattern PROVIDER = Pattern.compile("[a-z0-9][a-z0-9._-]{0,39}");
    private final MigrationRepository uploads;
    private final TransactionTemplate transaction;
    private final AuditLog audit;
    private final JsonMapper json;
    private final Clock clock;
    private final long maxRows;
    private final long maxBytes;

    DeviceMigration(MigrationRepository uploads, PlatformTransactionManager transactions, AuditLog audit,
                    JsonMapper json, Clock clock,
                    @Value("${push.dashboard.migration.max-rows:1000000}") long maxRows,
                    @Value("${push.dashboard.migration.max-bytes:200MB}") org.springframework.util.unit.DataSize maxBytes) {
        this.uploads = uploads;
        this.transaction = new TransactionTemplate(transactions);
        this.audit = audit;
        this.json = json;
        this.clock = clock;
        this.maxRows = maxRows;
        this.maxBytes = maxBytes.toBytes();
    }

    public long maxRows() {
        return maxRows;
    }

    public long maxBytes() {
        return maxBytes;
    }

    /** Who uploads: the member's id and address (kept in the history as they were). */
    public record Uploader(UUID memberId, String email) {
    }

    /** One row left out or in conflict, by line number (the line a row ends on). */
    public record Line(long line, String reason, String detail) {
    }

    /** A finished import: what was read, staged and skipped (by reason, and the first {@value #SAMPLES} lines). */
    public record Imported(UUID id, String format, String provider, String fileName, long rowsRead, long rowsStaged,
                           Map<String, Long> skipped, List<Line> skippedLines, String memberEmail, Instant importedAt) {
        public long rowsSkipped() {
            return skipped.values().stream().mapToLong(Long::longValue).sum();
        }
    }

    /** The upload changed nothing: the file as a whole, or some of its rows (conflicts, with the first lines), are refused. */
    public static final class Refused extends RuntimeException {
        private final List<Line> lines;
        private final long count;

        public Refused(String message) {
            this(message, List.of(), 0);
        }

        Refused(String message, List<Line> lines, long count) {
            super(message);
            this.lines = List.copyOf(lines);
            this.count = count;
        }

        public List<Line> lines() {
            return lines;
        }

        public long count() {
            return count;
        }
    }

    /** The provider name source ids are scoped to: lower case letters, digits, '.', '_' or '-', 1 to 40. */
    public static String provider(String raw) {
        String p = raw == null || raw.isBlank() ? "onesignal" : raw.strip().toLowerCase(Locale.ROOT);
        if (!PROVIDER.matcher(p).matches()) {
            throw new Refused("The provider name must be 1 to 40 lower-case letters, digits, '.', '_' or '-' (such as onesignal).", List.of(), 0);
        }
        return p;
    }

    /**
     * Imports {@code file} (read twice, left in place) into {@code appId}'s staged records.
     *
     * @throws Refused when nothing was changed: a problem with the file, or ownership conflicts
     */
    public Imported upload(UUID appId, Uploader who, String fileName, String rawProvider, Path file) {
        String provider = provider(rawProvider);
        String name = fileName(fileName);
        try {
            if (Files.size(file) > maxBytes) {
                throw new Refused(String.format(Locale.ROOT, "The file is larger than %,d MB, the most one upload takes: split it.",
                        maxBytes / (1024 * 1024)), List.of(), 0);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        // pass 1: validate everything, change nothing; the valid rows, hashed, go to a file of their own
        long validating = System.nanoTime();
        MigrationCsv.Skips skips = new MigrationCsv.Skips(SAMPLES);
        long[] valid = {0};
        MigrationCsv.Format format;
        Path rows = null;
        try {
            rows = Files.createTempFile("push-migration-rows-", ".copy");
            try (var out = Files.newBufferedWriter(rows, java.nio.charset.StandardCharsets.UTF_8)) {
                StringBuilder line = new StringBuilder(512);
                format = MigrationCsv.read(file, maxRows, r -> {
                    valid[0]++;
                    line.setLength(0);
                    MigrationRepository.copyLine(line, r);
                    try {
                        out.append(line);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }, skips);
            }
            long rowsRead = valid[0] + skips.byReason.values().stream().mapToLong(Long::longValue).sum();
            log.info("Migration upload of {} rows for app {}: validated in {} ms", rowsRead, appId,
                    (System.nanoTime() - validating) / 1_000_000);
            // pass 2: stage, in one transaction
            Path valid0 = rows;
            MigrationCsv.Format read = format;
            return transaction.execute(tx -> stage(appId, who, name, provider, valid0, read, rowsRead, skips));
        } catch (MigrationCsv.FileProblem e) {
            throw new Refused(e.getMessage(), List.of(), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (rows != null) {
                try {
                    Files.deleteIfExists(rows);
                } catch (IOException e) {
                    log.warn("Could not delete the upload's temporary file {}", rows, e);
                }
            }
        }
    }

    private Imported stage(UUID appId, Uploader who, String fileName, String provider, Path rows,
                           MigrationCsv.Format format, long rowsRead, MigrationCsv.Skips fileSkips) {
        long started = System.nanoTime();
        uploads.begin();
        uploads.copy(rows);
        long copied = System.nanoTime();
        uploads.skipRepeatsAndKnown(appId, provider);
        long conflictCount = uploads.conflictCount(appId, provider);
        if (conflictCount > 0) {
            throw new Refused(String.format(Locale.ROOT, "%,d row%s conflict with devices already staged, so nothing was imported. "
                    + "Remove those rows (or stage them in the app that holds them) and upload the file again.",
                    conflictCount, conflictCount == 1 ? "" : "s"), uploads.conflicts(appId, provider, SAMPLES), conflictCount);
        }
        long checked = System.nanoTime();

        // counts and the first lines: the first pass's skips and the database's, merged by line
        Map<String, Long> skipped = new java.util.TreeMap<>(fileSkips.byReason);
        uploads.skipCounts(skipped);
        List<Line> lines = new ArrayList<>();
        fileSkips.first.forEach(s -> lines.add(new Line(s.line(), s.reason(), s.detail())));
        lines.addAll(uploads.firstSkips(SAMPLES));
        lines.sort(Comparator.comparingLong(Line::line));
        List<Line> firstLines = List.copyOf(lines.subList(0, Math.min(SAMPLES, lines.size())));

        UUID id = UUID.randomUUID();
        Instant now = clock.instant();
        String formatName = format.name().toLowerCase(Locale.ROOT);
        uploads.insertImport(id, appId, who, fileName, formatName, provider, rowsRead, json.writeValueAsString(skipped),
                json.writeValueAsString(firstLines), now);
        int staged = uploads.stage(id, appId, provider, now);
        long inserted = System.nanoTime();
        audit.record(AuditLog.Actor.member(who.memberId()), appId, "migration.import", "migration_import", id,
                List.of("rows_staged", "rows_skipped"));
        log.info("Migration upload {} staged {} rows: copy {} ms, checks {} ms, insert {} ms", id, staged,
                (copied - started) / 1_000_000, (checked - copied) / 1_000_000, (inserted - checked) / 1_000_000);
        return new Imported(id, formatName, provider, fileName, rowsRead, staged, skipped, firstLines, who.email(), now);
    }

    /** The uploaded file's name as shown in the history: its last path segment, at most 255 characters, no control characters. */
    private static String fileName(String raw) {
        String name = raw == null ? "" : raw.replace('\\', '/');
        name = name.substring(name.lastIndexOf('/') + 1).strip();
        StringBuilder b = new StringBuilder();
        name.codePoints().filter(cp -> !Character.isISOControl(cp)).limit(255).forEach(b::appendCodePoint);
        return b.isEmpty() ? "upload.csv" : b.toString();
    }

    /** The app's imports, newest first. */
    public List<Imported> history(UUID appId, int limit) {
        return uploads.history(appId, limit).stream()
                .map(r -> new Imported(r.id(), r.format(), r.provider(), r.fileName(), r.rowsRead(), r.rowsStaged(),
                        counts(r.skipped()), lines(r.skippedLines()), r.memberEmail(), r.importedAt()))
                .toList();
    }

    /** Staged records of the app: how many, and how many registrations have claimed. */
    public record StagedCounts(long staged, long claimed) {
    }

    public StagedCounts stagedCounts(UUID appId) {
        return uploads.stagedCounts(appId);
    }

    private Map<String, Long> counts(String text) {
        Map<String, Long> m = new LinkedHashMap<>();
        json.readTree(text).properties().forEach(e -> m.put(e.getKey(), e.getValue().asLong()));
        return m;
    }

    private List<Line> lines(String text) {
        List<Line> l = new ArrayList<>();
        json.readTree(text).forEach(n -> l.add(new Line(n.path("line").asLong(), n.path("reason").asString(), n.path("detail").asString())));
        return l;
    }
}
