package dev.pushservice.devices;

import dev.pushservice.audit.AuditLog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.json.JsonMapper;

/**
 * Migration upload (spec "Device", migration rules; docs/dashboard.md "Migration upload"): stages a
 * previous provider's devices from a CSV file so that registrations claim them
 * ({@link DeviceService}, {@code register_device}).
 *
 * <p>Two passes over the file on disk, so memory does not grow with it. The first validates every row
 * and changes nothing: a problem with the file refuses it. The second runs in one transaction: it
 * streams the valid rows into a temporary table with {@code COPY}, finds rows repeated in the file,
 * tokens already registered or staged, and ownership conflicts with set-based statements, and, unless
 * there is a conflict (then it rolls back: no row changes), copies the rest into
 * {@code migration_staged_devices} with one {@code INSERT ... SELECT}, with the import-history row and
 * the audit entry. Only the SHA-256 identity hash of a token (the one registration matches on) is ever
 * sent to the database. Uploads run one at a time (a transaction-level advisory lock), so the
 * conflict checks see every other upload's records.
 */
@Service
public class DeviceMigration {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(DeviceMigration.class);

    /** How many skipped rows (and conflicts) are kept with their line numbers. */
    public static final int SAMPLES = 100;

    private static final Pattern PROVIDER = Pattern.compile("[a-z0-9][a-z0-9._-]{0,39}");
    /** Advisory-lock key of uploads ("migr" in ASCII). */
    private static final long LOCK = 0x6d696772L;

    private final JdbcClient jdbc;
    private final DataSource dataSource;
    private final TransactionTemplate transaction;
    private final AuditLog audit;
    private final JsonMapper json;
    private final Clock clock;
    private final long maxRows;
    private final long maxBytes;

    DeviceMigration(JdbcClient jdbc, DataSource dataSource, PlatformTransactionManager transactions, AuditLog audit,
                    JsonMapper json, Clock clock,
                    @Value("${push.dashboard.migration.max-rows:1000000}") long maxRows,
                    @Value("${push.dashboard.migration.max-bytes:200MB}") org.springframework.util.unit.DataSize maxBytes) {
        this.jdbc = jdbc;
        this.dataSource = dataSource;
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
        // pass 1: validate everything, change nothing
        long validating = System.nanoTime();
        MigrationCsv.Skips skips = new MigrationCsv.Skips(SAMPLES);
        long[] valid = {0};
        MigrationCsv.Format format;
        try {
            format = MigrationCsv.read(file, maxRows, r -> valid[0]++, skips);
        } catch (MigrationCsv.FileProblem e) {
            throw new Refused(e.getMessage(), List.of(), 0);
        }
        long rowsRead = valid[0] + skips.byReason.values().stream().mapToLong(Long::longValue).sum();
        log.info("Migration upload of {} rows for app {}: validated in {} ms", rowsRead, appId, (System.nanoTime() - validating) / 1_000_000);
        // pass 2: stage, in one transaction
        return transaction.execute(tx -> stage(appId, who, name, provider, file, format, rowsRead, skips));
    }

    private Imported stage(UUID appId, Uploader who, String fileName, String provider, Path file,
                           MigrationCsv.Format format, long rowsRead, MigrationCsv.Skips fileSkips) {
        long started = System.nanoTime();
        jdbc.sql("select pg_advisory_xact_lock(:lock)").param("lock", LOCK).query(Object.class).single();
        // the sorts and hash joins below see up to a million rows: in memory, not in batches on disk
        jdbc.sql("set local work_mem = '128MB'").update();
        jdbc.sql("""
                create temporary table migration_upload (
                    line bigint not null, platform text not null, token_hash bytea not null, source_device_id text not null,
                    external_user_id text, app_version text, device_model text, os_version text, locale text,
                    timezone text, tags jsonb) on commit drop""").update();
        jdbc.sql("create temporary table migration_upload_skips (line bigint not null, reason text not null, detail text not null) on commit drop")
                .update();
        copy(file, format);
        jdbc.sql("analyze migration_upload").update();
        long copied = System.nanoTime();

        // a token or a source id repeated in the file: the first row counts, the later ones are skipped
        jdbc.sql("""
                insert into migration_upload_skips
                select line, 'duplicate_in_file',
                       case when line > first_token then 'same push token as line ' || first_token
                            else 'same source id as line ' || first_source end
                from (select line, min(line) over (partition by platform, token_hash) as first_token,
                             min(line) over (partition by source_device_id) as first_source
                      from migration_upload) d
                where line > first_token or line > first_source""").update();
        jdbc.sql("""
                insert into migration_upload_skips
                select u.line, 'already_registered', 'a device with this push token is registered in the app'
                from migration_upload u
                join devices d on d.app_id = :app and d.platform = u.platform and d.token_hash = u.token_hash
                where not exists (select 1 from migration_upload_skips s where s.line = u.line)""")
                .param("app", appId).update();
        jdbc.sql("""
                insert into migration_upload_skips
                select u.line, 'already_staged',
                       case when s.claimed_at is null then 'staged by an earlier upload' else 'staged by an earlier upload and claimed' end
                from migration_upload u
                join migration_staged_devices s on s.app_id = :app and s.platform = u.platform and s.token_hash = u.token_hash
                     and s.source_provider = :provider and s.source_device_id = u.source_device_id
                where not exists (select 1 from migration_upload_skips k where k.line = u.line)""")
                .param("app", appId).param("provider", provider).update();

        // ownership conflicts: records that would make one token or one source id name two devices
        String conflicts = """
                select u.line, case when s.app_id <> :app then 'the push token is staged for another app'
                                    else 'the push token is staged for source id ' || s.source_provider || ':' || s.source_device_id end
                from migration_upload u
                join migration_staged_devices s on s.platform = u.platform and s.token_hash = u.token_hash
                where (s.app_id <> :app or s.source_provider <> :provider or s.source_device_id <> u.source_device_id)
                  and not exists (select 1 from migration_upload_skips k where k.line = u.line)
                union all
                select u.line, 'the source id is staged for another push token'
                from migration_upload u
                join migration_staged_devices s on s.app_id = :app and s.source_provider = :provider
                     and s.source_device_id = u.source_device_id
                where (s.platform <> u.platform or s.token_hash <> u.token_hash)
                  and not exists (select 1 from migration_upload_skips k where k.line = u.line)""";
        long conflictCount = jdbc.sql("select count(distinct line) from (" + conflicts + ") c(line, detail)")
                .param("app", appId).param("provider", provider).query(Long.class).single();
        if (conflictCount > 0) {
            List<Line> first = jdbc.sql("select distinct on (line) line, detail from (" + conflicts + ") c(line, detail) order by line limit " + SAMPLES)
                    .param("app", appId).param("provider", provider)
                    .query((rs, n) -> new Line(rs.getLong(1), "conflict", rs.getString(2))).list();
            throw new Refused(String.format(Locale.ROOT, "%,d row%s conflict with devices already staged, so nothing was imported. "
                    + "Remove those rows (or stage them in the app that holds them) and upload the file again.",
                    conflictCount, conflictCount == 1 ? "" : "s"), first, conflictCount);
        }
        long checked = System.nanoTime();

        // counts and the first lines: the first pass's skips and the database's, merged by line
        Map<String, Long> skipped = new java.util.TreeMap<>(fileSkips.byReason);
        jdbc.sql("select reason, count(*) from migration_upload_skips group by reason")
                .query((rs, n) -> skipped.merge(rs.getString(1), rs.getLong(2), Long::sum)).list();
        List<Line> lines = new ArrayList<>();
        fileSkips.first.forEach(s -> lines.add(new Line(s.line(), s.reason(), s.detail())));
        lines.addAll(jdbc.sql("select line, reason, detail from migration_upload_skips order by line limit " + SAMPLES)
                .query((rs, n) -> new Line(rs.getLong(1), rs.getString(2), rs.getString(3))).list());
        lines.sort(Comparator.comparingLong(Line::line));
        List<Line> firstLines = List.copyOf(lines.subList(0, Math.min(SAMPLES, lines.size())));

        UUID id = UUID.randomUUID();
        Instant now = clock.instant();
        String formatName = format.name().toLowerCase(Locale.ROOT);
        jdbc.sql("""
                insert into migration_imports (id, app_id, member_id, member_email, file_name, format, source_provider,
                                               rows_read, rows_staged, skipped, skipped_lines, imported_at)
                values (:id, :app, :member, :email, :file, :format, :provider, :read, 0, cast(:skipped as jsonb),
                        cast(:lines as jsonb), :at)""")
                .param("id", id).param("app", appId).param("member", who.memberId()).param("email", who.email())
                .param("file", fileName).param("format", formatName).param("provider", provider).param("read", rowsRead)
                .param("skipped", json.writeValueAsString(skipped)).param("lines", json.writeValueAsString(firstLines))
                .param("at", now.atOffset(ZoneOffset.UTC)).update();
        int staged = jdbc.sql("""
                insert into migration_staged_devices (app_id, platform, token_hash, source_provider, source_device_id,
                                                      external_user_id, app_version, device_model, os_version, locale,
                                                      timezone, tags, staged_at, import_id)
                select :app, u.platform, u.token_hash, :provider, u.source_device_id, u.external_user_id, u.app_version,
                       u.device_model, u.os_version, u.locale, u.timezone, u.tags, :at, :id
                from migration_upload u
                where not exists (select 1 from migration_upload_skips k where k.line = u.line)
                order by u.platform, u.token_hash""")
                .param("app", appId).param("provider", provider).param("at", now.atOffset(ZoneOffset.UTC)).param("id", id)
                .update();
        long inserted = System.nanoTime();
        jdbc.sql("update migration_imports set rows_staged = :staged where id = :id").param("staged", staged).param("id", id).update();
        audit.record(AuditLog.Actor.member(who.memberId()), appId, "migration.import", "migration_import", id,
                List.of("rows_staged", "rows_skipped"));
        log.info("Migration upload {} staged {} rows: copy {} ms, checks {} ms, insert {} ms", id, staged,
                (copied - started) / 1_000_000, (checked - copied) / 1_000_000, (inserted - checked) / 1_000_000);
        return new Imported(id, formatName, provider, fileName, rowsRead, staged, skipped, firstLines, who.email(), now);
    }

    /** Streams the valid rows of {@code file} into {@code migration_upload} (COPY text format, 64 KiB at a time). */
    private void copy(Path file, MigrationCsv.Format expected) {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            CopyIn copy = connection.unwrap(PGConnection.class).getCopyAPI().copyIn(
                    "copy migration_upload (line, platform, token_hash, source_device_id, external_user_id, app_version, "
                            + "device_model, os_version, locale, timezone, tags) from stdin");
            try {
                StringBuilder buffer = new StringBuilder(1 << 17);
                HexFormat hex = HexFormat.of();
                MigrationCsv.Format format = MigrationCsv.read(file, maxRows, r -> {
                    buffer.append(r.line()).append('\t').append(r.platform().value()).append("\t\\\\x")
                            .append(hex.formatHex(r.tokenHash())).append('\t');
                    field(buffer, r.sourceDeviceId()).append('\t');
                    field(buffer, r.externalUserId()).append('\t');
                    field(buffer, r.appVersion()).append('\t');
                    field(buffer, r.deviceModel()).append('\t');
                    field(buffer, r.osVersion()).append('\t');
                    field(buffer, r.locale()).append('\t');
                    field(buffer, r.timezone()).append('\t');
                    field(buffer, r.tagsJson()).append('\n');
                    if (buffer.length() >= 1 << 16) flush(copy, buffer);
                }, s -> { });
                if (format != expected) throw new IllegalStateException("the file changed between its two readings");
                flush(copy, buffer);
                copy.endCopy();
            } finally {
                if (copy.isActive()) copy.cancelCopy();
            }
        } catch (SQLException e) {
            throw new IllegalStateException("COPY into the upload's temporary table failed", e);
        }
    }

    private static void flush(CopyIn copy, StringBuilder buffer) {
        if (buffer.isEmpty()) return;
        byte[] bytes = buffer.toString().getBytes(StandardCharsets.UTF_8);
        try {
            copy.writeToCopy(bytes, 0, bytes.length);
        } catch (SQLException e) {
            throw new IllegalStateException("COPY into the upload's temporary table failed", e);
        }
        buffer.setLength(0);
    }

    /** A value in COPY's text format: {@code \N} for null, backslash and the separators escaped. */
    private static StringBuilder field(StringBuilder b, String v) {
        if (v == null) return b.append("\\N");
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            switch (c) {
                case '\\' -> b.append("\\\\");
                case '\t' -> b.append("\\t");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                default -> b.append(c);
            }
        }
        return b;
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
        return jdbc.sql("""
                        select id, format, source_provider, file_name, rows_read, rows_staged, skipped::text, skipped_lines::text,
                               member_email, imported_at
                        from migration_imports where app_id = :app order by imported_at desc, id limit :limit""")
                .param("app", appId).param("limit", limit)
                .query((rs, n) -> new Imported(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3), rs.getString(4),
                        rs.getLong(5), rs.getLong(6), counts(rs.getString(7)), lines(rs.getString(8)), rs.getString(9),
                        rs.getObject(10, java.time.OffsetDateTime.class).toInstant()))
                .list();
    }

    /** Staged records of the app: how many, and how many registrations have claimed. */
    public record StagedCounts(long staged, long claimed) {
    }

    public StagedCounts stagedCounts(UUID appId) {
        return jdbc.sql("select count(*), count(claimed_at) from migration_staged_devices where app_id = :app")
                .param("app", appId).query((rs, n) -> new StagedCounts(rs.getLong(1), rs.getLong(2))).single();
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
