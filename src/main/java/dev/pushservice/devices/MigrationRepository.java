package dev.pushservice.devices;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.stereotype.Repository;

/**
 * SQL of migration uploads ({@link DeviceMigration}): the upload's temporary tables in the caller's
 * transaction, filled with {@code COPY}, the set-based checks on them, the staging insert, and the
 * import history. Every statement on stored rows filters by app, except the conflict check, which
 * looks for the same token staged for any app.
 */
@Repository
class MigrationRepository {

    /** Advisory-lock key of uploads ("migr" in ASCII). */
    private static final long LOCK = 0x6d696772L;

    private final JdbcClient jdbc;
    private final DataSource dataSource;

    MigrationRepository(JdbcClient jdbc, DataSource dataSource) {
        this.jdbc = jdbc;
        this.dataSource = dataSource;
    }

    /**
     * In a transaction: waits for other uploads to finish (one at a time), gives the transaction's sorts
     * and hash joins room for a million rows in memory, and creates the temporary tables (dropped at commit).
     */
    void begin() {
        jdbc.sql("select pg_advisory_xact_lock(:lock)").param("lock", LOCK).query(Object.class).single();
        jdbc.sql("set local work_mem = '128MB'").update();
        jdbc.sql("""
                create temporary table migration_upload (
                    line bigint not null, platform text not null, token_hash bytea not null, source_device_id text not null,
                    external_user_id text, app_version text, device_model text, os_version text, locale text,
                    timezone text, tags jsonb) on commit drop""").update();
        jdbc.sql("create temporary table migration_upload_skips (line bigint not null, reason text not null, detail text not null) on commit drop")
                .update();
    }

    /**
     * Appends {@code r} to {@code b} as one line of {@code COPY migration_upload}'s text format (the
     * token only as its hash). The first pass writes the upload's valid rows this way to a file of
     * its own, which {@link #copy} then streams as it is.
     */
    static void copyLine(StringBuilder b, MigrationCsv.Row r) {
        b.append(r.line()).append('\t').append(r.platform().value()).append("\t\\\\x");
        HexFormat.of().formatHex(b, r.tokenHash()).append('\t');
        field(b, r.sourceDeviceId()).append('\t');
        field(b, r.externalUserId()).append('\t');
        field(b, r.appVersion()).append('\t');
        field(b, r.deviceModel()).append('\t');
        field(b, r.osVersion()).append('\t');
        field(b, r.locale()).append('\t');
        field(b, r.timezone()).append('\t');
        field(b, r.tagsJson()).append('\n');
    }

    /**
     * Streams {@code rows} (lines written by {@link #copyLine}, UTF-8) into {@code migration_upload}
     * with {@code COPY}, 64 KiB at a time, on the transaction's connection; then lets the planner see them.
     */
    void copy(Path rows) {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try (var in = java.nio.file.Files.newInputStream(rows)) {
            CopyIn copy = connection.unwrap(PGConnection.class).getCopyAPI().copyIn(
                    "copy migration_upload (line, platform, token_hash, source_device_id, external_user_id, app_version, "
                            + "device_model, os_version, locale, timezone, tags) from stdin");
            try {
                byte[] buffer = new byte[1 << 16];
                for (int n; (n = in.read(buffer)) > 0; ) copy.writeToCopy(buffer, 0, n);
                copy.endCopy();
            } finally {
                if (copy.isActive()) copy.cancelCopy();
            }
        } catch (SQLException e) {
            throw new IllegalStateException("COPY into the upload's temporary table failed", e);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        jdbc.sql("analyze migration_upload").update();
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

    /**
     * Records as skipped: rows repeating the token or the source id of an earlier row (the first
     * counts), rows whose token is registered in the app, rows staged before for the same source id.
     */
    void skipRepeatsAndKnown(UUID appId, String provider) {
        // hash aggregates find the few repeated keys; only their rows are looked at again
        jdbc.sql("""
                insert into migration_upload_skips
                select u.line, 'duplicate_in_file', 'same push token as line ' || d.first
                from (select platform, token_hash, min(line) as first from migration_upload
                      group by platform, token_hash having count(*) > 1) d
                join migration_upload u on u.platform = d.platform and u.token_hash = d.token_hash and u.line > d.first""").update();
        jdbc.sql("""
                insert into migration_upload_skips
                select u.line, 'duplicate_in_file', 'same source id as line ' || d.first
                from (select source_device_id, min(line) as first from migration_upload
                      group by source_device_id having count(*) > 1) d
                join migration_upload u on u.source_device_id = d.source_device_id and u.line > d.first
                where not exists (select 1 from migration_upload_skips k where k.line = u.line)""").update();
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
    }

    /** Rows that would make one token or one source id name two devices (see docs/dashboard.md "Migration upload"). */
    private static final String CONFLICTS = """
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

    long conflictCount(UUID appId, String provider) {
        return jdbc.sql("select count(distinct line) from (" + CONFLICTS + ") c(line, detail)")
                .param("app", appId).param("provider", provider).query(Long.class).single();
    }

    List<DeviceMigration.Line> conflicts(UUID appId, String provider, int limit) {
        return jdbc.sql("select distinct on (line) line, detail from (" + CONFLICTS + ") c(line, detail) order by line limit :limit")
                .param("app", appId).param("provider", provider).param("limit", limit)
                .query((rs, n) -> new DeviceMigration.Line(rs.getLong(1), "conflict", rs.getString(2))).list();
    }

    /** Rows skipped by the checks in the database, by reason. */
    void skipCounts(Map<String, Long> into) {
        jdbc.sql("select reason, count(*) from migration_upload_skips group by reason")
                .query((rs, n) -> into.merge(rs.getString(1), rs.getLong(2), Long::sum)).list();
    }

    List<DeviceMigration.Line> firstSkips(int limit) {
        return jdbc.sql("select line, reason, detail from migration_upload_skips order by line limit :limit").param("limit", limit)
                .query((rs, n) -> new DeviceMigration.Line(rs.getLong(1), rs.getString(2), rs.getString(3))).list();
    }

    void insertImport(UUID id, UUID appId, DeviceMigration.Uploader who, String fileName, String format, String provider,
                      long rowsRead, String skippedJson, String linesJson, Instant at) {
        jdbc.sql("""
                insert into migration_imports (id, app_id, member_id, member_email, file_name, format, source_provider,
                                               rows_read, rows_staged, skipped, skipped_lines, imported_at)
                values (:id, :app, :member, :email, :file, :format, :provider, :read, 0, cast(:skipped as jsonb),
                        cast(:lines as jsonb), :at)""")
                .param("id", id).param("app", appId).param("member", who.memberId()).param("email", who.email())
                .param("file", fileName).param("format", format).param("provider", provider).param("read", rowsRead)
                .param("skipped", skippedJson).param("lines", linesJson)
                .param("at", at.atOffset(ZoneOffset.UTC)).update();
    }

    /**
     * Stages every row not skipped, in one statement, in token order (so the token indexes grow at
     * their ends instead of at random pages); records the count on the import.
     */
    int stage(UUID importId, UUID appId, String provider, Instant at) {
        int staged = jdbc.sql("""
                insert into migration_staged_devices (app_id, platform, token_hash, source_provider, source_device_id,
                                                      external_user_id, app_version, device_model, os_version, locale,
                                                      timezone, tags, staged_at, import_id)
                select :app, u.platform, u.token_hash, :provider, u.source_device_id, u.external_user_id, u.app_version,
                       u.device_model, u.os_version, u.locale, u.timezone, u.tags, :at, :id
                from migration_upload u
                where not exists (select 1 from migration_upload_skips k where k.line = u.line)
                order by u.platform, u.token_hash""")
                .param("app", appId).param("provider", provider).param("at", at.atOffset(ZoneOffset.UTC)).param("id", importId)
                .update();
        jdbc.sql("update migration_imports set rows_staged = :staged where id = :id").param("staged", staged).param("id", importId).update();
        return staged;
    }

    /** A row of the import history, its JSON columns as text. */
    record ImportRow(UUID id, String format, String provider, String fileName, long rowsRead, long rowsStaged,
                     String skipped, String skippedLines, String memberEmail, Instant importedAt) {
    }

    List<ImportRow> history(UUID appId, int limit) {
        return jdbc.sql("""
                        select id, format, source_provider, file_name, rows_read, rows_staged, skipped::text, skipped_lines::text,
                               member_email, imported_at
                        from migration_imports where app_id = :app order by imported_at desc, id limit :limit""")
                .param("app", appId).param("limit", limit)
                .query((rs, n) -> new ImportRow(rs.getObject(1, UUID.class), rs.getString(2), rs.getString(3), rs.getString(4),
                        rs.getLong(5), rs.getLong(6), rs.getString(7), rs.getString(8), rs.getString(9),
                        rs.getObject(10, java.time.OffsetDateTime.class).toInstant()))
                .list();
    }

    DeviceMigration.StagedCounts stagedCounts(UUID appId) {
        return jdbc.sql("select count(*), count(claimed_at) from migration_staged_devices where app_id = :app")
                .param("app", appId).query((rs, n) -> new DeviceMigration.StagedCounts(rs.getLong(1), rs.getLong(2))).single();
    }
}
