package dev.pushservice.exports;

import dev.pushservice.segments.FilterCompiler;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;

/**
 * SQL for {@code exports} and {@code export_chunks}, and the read-only queries that produce each
 * export type's rows. Those read other features' tables directly: an export is a bulk report that
 * must stream millions of rows through one server-side cursor, which no feature's paged reads can
 * do; the queries only select, always by {@code app_id}, and never a token or secret column.
 */
@Repository
class ExportRepository {

    /** Rows fetched per round trip by the export cursor. */
    static final int FETCH_SIZE = 5000;

    private final JdbcClient jdbc;
    private final NamedParameterJdbcTemplate cursor;
    private final JsonMapper json;

    ExportRepository(JdbcClient jdbc, DataSource dataSource, JsonMapper json) {
        this.jdbc = jdbc;
        JdbcTemplate template = new JdbcTemplate(dataSource);
        // with autocommit off (inside a transaction) pgjdbc reads through a portal, FETCH_SIZE rows at a time
        template.setFetchSize(FETCH_SIZE);
        this.cursor = new NamedParameterJdbcTemplate(template);
        this.json = json;
    }

    record Row(UUID id, UUID appId, ExportType type, ExportFilters filters, String status, long rowCount, Long sizeBytes,
               Long storedBytes, Integer chunkCount, String failureReason, int attempts, Instant createdAt,
               Instant startedAt, Instant progressAt, Instant completedAt, Instant expiresAt) {
    }

    private static final String COLUMNS = """
            id, app_id, type, filters::text as filters, status, row_count, size_bytes, stored_bytes, chunk_count,
            failure_reason, attempts, created_at, started_at, progress_at, completed_at, expires_at""";

    void insert(UUID id, UUID appId, ExportType type, ExportFilters filters, Instant now) {
        jdbc.sql("""
                insert into exports (id, app_id, type, filters, status, created_at)
                values (:id, :app, :type, cast(:filters as jsonb), 'pending', :now)""")
                .param("id", id).param("app", appId).param("type", type.value())
                .param("filters", json.writeValueAsString(filters)).param("now", utc(now))
                .update();
    }

    Optional<Row> find(UUID appId, UUID id) {
        return jdbc.sql("select " + COLUMNS + " from exports where app_id = :app and id = :id")
                .param("app", appId).param("id", id).query(this::row).optional();
    }

    /** The export row, locked until the end of the caller's transaction. */
    Optional<Row> lock(UUID appId, UUID id) {
        return jdbc.sql("select " + COLUMNS + " from exports where app_id = :app and id = :id for update")
                .param("app", appId).param("id", id).query(this::row).optional();
    }

    List<Row> newest(UUID appId, int limit, long offset) {
        return jdbc.sql("select " + COLUMNS + " from exports where app_id = :app order by created_at desc, id desc"
                        + " limit :limit offset :offset")
                .param("app", appId).param("limit", limit).param("offset", offset).query(this::row).list();
    }

    /** Starts (or restarts) a run: the previous attempt's chunks go, counters reset. */
    void start(UUID id, Instant now) {
        jdbc.sql("delete from export_chunks where export_id = :id").param("id", id).update();
        jdbc.sql("""
                update exports set status = 'running', attempts = attempts + 1, row_count = 0, started_at = :now,
                                   progress_at = :now, failure_reason = null
                where id = :id""")
                .param("id", id).param("now", utc(now)).update();
    }

    void appendChunk(UUID id, int seq, byte[] data) {
        jdbc.sql("insert into export_chunks (export_id, seq, data) values (:id, :seq, :data)")
                .param("id", id).param("seq", seq).param("data", data).update();
    }

    /** Rows written so far, and proof of life for the run with {@code attempt}; false if it is no longer this run's. */
    boolean progress(UUID id, int attempt, long rows, Instant now) {
        return jdbc.sql("""
                update exports set row_count = :rows, progress_at = :now
                where id = :id and status = 'running' and attempts = :attempt""")
                .param("id", id).param("attempt", attempt).param("rows", rows).param("now", utc(now)).update() == 1;
    }

    boolean complete(UUID id, int attempt, long rows, long size, long stored, int chunks, Instant now, Instant expiresAt) {
        return jdbc.sql("""
                update exports set status = 'completed', row_count = :rows, size_bytes = :size, stored_bytes = :stored,
                                   chunk_count = :chunks, progress_at = :now, completed_at = :now, expires_at = :expires
                where id = :id and status = 'running' and attempts = :attempt""")
                .param("id", id).param("attempt", attempt).param("rows", rows).param("size", size)
                .param("stored", stored).param("chunks", chunks).param("now", utc(now))
                .param("expires", utc(expiresAt)).update() == 1;
    }

    void fail(UUID id, String reason, Instant now) {
        jdbc.sql("delete from export_chunks where export_id = :id").param("id", id).update();
        jdbc.sql("""
                update exports set status = 'failed', failure_reason = :reason, progress_at = :now
                where id = :id and status in ('pending', 'running')""")
                .param("id", id).param("reason", reason).param("now", utc(now)).update();
    }

    Optional<byte[]> chunk(UUID id, int seq) {
        return jdbc.sql("select data from export_chunks where export_id = :id and seq = :seq")
                .param("id", id).param("seq", seq).query(byte[].class).optional();
    }

    /** Deletes the files of completed exports past their expiry and marks them expired; how many. */
    int expire(Instant now, int limit) {
        List<UUID> ids = jdbc.sql("""
                select id from exports where status = 'completed' and expires_at <= :now
                order by expires_at limit :limit for update skip locked""")
                .param("now", utc(now)).param("limit", limit).query(UUID.class).list();
        if (ids.isEmpty()) return 0;
        jdbc.sql("delete from export_chunks where export_id = any(:ids)").param("ids", ids.toArray(UUID[]::new)).update();
        return jdbc.sql("update exports set status = 'expired' where id = any(:ids)")
                .param("ids", ids.toArray(UUID[]::new)).update();
    }

    /**
     * Pending or running exports whose export task no longer exists (moved to {@code dead_letter_jobs},
     * or removed by hand): nothing will ever finish them. Reads db-scheduler's {@code scheduled_tasks}.
     */
    List<UUID> orphaned(String taskName, int limit) {
        return jdbc.sql("""
                select e.id from exports e
                where e.status in ('pending', 'running')
                  and not exists (select 1 from scheduled_tasks t where t.task_name = :task and t.task_instance = e.id::text)
                limit :limit""")
                .param("task", taskName).param("limit", limit).query(UUID.class).list();
    }

    // ---------------------------------------------------------------- export rows

    /** The SQL and parameters producing one export's rows, in the order of {@link ExportType#columns()}. */
    record Query(String sql, Map<String, Object> params, boolean compiledFilter) {
    }

    Query query(UUID appId, ExportType type, ExportFilters f, FilterCompiler.Compiled segment) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("app", appId);
        String time;
        StringBuilder sql = new StringBuilder();
        switch (type) {
            case AUDIENCE -> {
                time = "d.created_at";
                sql.append("""
                        select d.id, d.platform, u.external_user_id, d.app_version, d.device_model, d.os_version, d.locale,
                               d.timezone, d.enabled, d.invalidated_at, d.invalidation_reason, u.tags::text, d.last_seen_at,
                               d.created_at
                        from devices d left join users u on u.id = d.user_id
                        """);
                if (segment != null) sql.append(segment.joins()).append('\n');
                sql.append("where d.app_id = :app");
                if (segment != null) {
                    sql.append(" and d.enabled and d.invalidated_at is null and (").append(segment.predicate()).append(')');
                    p.putAll(segment.params());
                }
            }
            case MESSAGE -> {
                time = "n.created_at";
                sql.append("""
                        select n.id, n.name, n.status, n.priority, n.interruption_level, n.template_id, n.template_version,
                               n.recipient_count, n.scheduled_at, n.created_at, n.queued_at, n.finished_at
                        from notifications n where n.app_id = :app""");
            }
            case RECIPIENT -> {
                time = "r.updated_at";
                // with the recipients handed to a delivery lane and not recorded yet, as sending
                sql.append("""
                        select r.notification_id, r.device_id, r.platform, r.external_user_id, r.status, r.attempts,
                               r.last_error, r.provider_message_id, r.updated_at
                        from notification_recipient_states r where r.app_id = :app""");
                if (f.notificationId() != null) {
                    sql.append(" and r.notification_id = :notification");
                    p.put("notification", f.notificationId());
                }
            }
            case EVENT -> {
                time = "e.occurred_at";
                sql.append("""
                        select e.id, e.event_type, e.event_name, e.device_id, e.user_id, e.notification_id, e.metadata::text,
                               e.occurred_at, e.received_at
                        from events e where e.app_id = :app""");
            }
            case AUDIT -> {
                time = "a.occurred_at";
                sql.append("""
                        select a.occurred_at, a.actor, a.key_id, a.key_kind, a.action, a.target_type, a.target_id,
                               a.request_id, a.changed_fields, a.member_id
                        from audit_log a where a.app_id = :app""");
            }
            default -> throw new IllegalStateException("unknown export type " + type);
        }
        if (f.from() != null) {
            sql.append(" and ").append(time).append(" >= :from");
            p.put("from", utc(f.from()));
        }
        if (f.to() != null) {
            sql.append(" and ").append(time).append(" < :to");
            p.put("to", utc(f.to()));
        }
        sql.append(switch (type) {
            case AUDIENCE -> " order by d.created_at, d.id";
            case MESSAGE -> " order by n.created_at, n.id";
            case RECIPIENT -> " order by r.notification_id, r.device_id";
            case EVENT -> " order by e.occurred_at, e.id";
            case AUDIT -> " order by a.occurred_at, a.id";
        });
        return new Query(sql.toString(), p, segment != null);
    }

    /**
     * Runs {@code query} through a server-side cursor ({@value #FETCH_SIZE} rows per fetch), handing each
     * row to {@code sink} as text: timestamps in ISO 8601 UTC, booleans {@code true}/{@code false}, text
     * arrays joined with {@code ;}, null as null. Must run inside a transaction (the cursor lives in it).
     */
    void stream(Query query, Consumer<String[]> sink) {
        if (query.compiledFilter()) jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        jdbc.sql("set local timezone = 'UTC'").update();
        jdbc.sql("set local datestyle = 'ISO, YMD'").update();
        String[][] kinds = {null};
        String[][] values = {null};
        // a lambda, not a class: the row handler stays part of this repository
        RowCallbackHandler rows = rs -> {
            if (kinds[0] == null) {
                ResultSetMetaData md = rs.getMetaData();
                kinds[0] = new String[md.getColumnCount()];
                for (int i = 0; i < kinds[0].length; i++) kinds[0][i] = md.getColumnTypeName(i + 1);
                values[0] = new String[kinds[0].length];
            }
            for (int i = 0; i < kinds[0].length; i++) values[0][i] = text(rs, i + 1, kinds[0][i]);
            sink.accept(values[0]);
        };
        cursor.query(query.sql(), query.params(), rows);
    }

    private static String text(ResultSet rs, int column, String kind) throws SQLException {
        switch (kind) {
            case "timestamptz" -> {
                // PostgreSQL's ISO output in UTC (set in stream()), "2026-11-24 02:26:08.150037+00", made
                // ISO 8601 by two character edits: parsing it into a Java time and printing it again
                // took a quarter of a large export's time
                String t = rs.getString(column);
                if (t == null) return null;
                if (!t.endsWith("+00") || t.length() < 20 || t.charAt(10) != ' ') {
                    return rs.getObject(column, OffsetDateTime.class).toInstant().toString();
                }
                return t.substring(0, 10) + 'T' + t.substring(11, t.length() - 3) + 'Z';
            }
            case "bool" -> {
                boolean b = rs.getBoolean(column);
                return rs.wasNull() ? null : String.valueOf(b);
            }
            case "_text" -> {
                Array a = rs.getArray(column);
                return a == null ? null : String.join(";", (String[]) a.getArray());
            }
            default -> {
                return rs.getString(column);
            }
        }
    }

    private Row row(ResultSet rs, int n) throws SQLException {
        return new Row(rs.getObject("id", UUID.class), rs.getObject("app_id", UUID.class),
                ExportType.of(rs.getString("type")).orElseThrow(),
                json.readValue(rs.getString("filters"), ExportFilters.class), rs.getString("status"),
                rs.getLong("row_count"), (Long) rs.getObject("size_bytes"), (Long) rs.getObject("stored_bytes"),
                (Integer) rs.getObject("chunk_count"), rs.getString("failure_reason"), rs.getInt("attempts"),
                instant(rs, "created_at"), instant(rs, "started_at"), instant(rs, "progress_at"),
                instant(rs, "completed_at"), instant(rs, "expires_at"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    private static OffsetDateTime utc(Instant instant) {
        return instant == null ? null : instant.atOffset(ZoneOffset.UTC);
    }
}
