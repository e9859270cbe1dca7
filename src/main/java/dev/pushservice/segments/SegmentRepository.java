package dev.pushservice.segments;

import dev.pushservice.platform.pagination.PageRequest;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** SQL for segments and their versions. Every statement filters by app. */
@Repository
class SegmentRepository {

    private static final String VIEW = """
            select s.id, s.name, s.description, v.filter::text as filter, s.current_version, s.status, s.created_at, s.updated_at
            from segments s join segment_versions v on v.segment_id = s.id and v.version = s.current_version""";

    private final JdbcClient jdbc;
    private final JsonMapper json;

    SegmentRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    void insert(UUID appId, UUID id, String name, String description, JsonNode filter) {
        jdbc.sql("insert into segments (id, app_id, name, description) values (:id, :app, :name, :description)")
                .param("id", id).param("app", appId).param("name", name).param("description", description).update();
        insertVersion(id, 1, name, description, filter);
    }

    /**
     * Moves an active segment to its next version (row-locked, so concurrent PATCHes get distinct
     * versions) and returns that version; empty when the segment is unknown or another app's.
     */
    Optional<Integer> bumpVersion(UUID appId, UUID id, String name, String description) {
        return jdbc.sql("""
                        update segments set current_version = current_version + 1, name = :name, description = :description,
                               updated_at = now()
                        where app_id = :app and id = :id and status = 'active'
                        returning current_version""")
                .param("app", appId).param("id", id).param("name", name).param("description", description)
                .query(Integer.class).optional();
    }

    void insertVersion(UUID id, int version, String name, String description, JsonNode filter) {
        jdbc.sql("""
                        insert into segment_versions (segment_id, version, name, description, filter)
                        values (:id, :version, :name, :description, cast(:filter as jsonb))""")
                .param("id", id).param("version", version).param("name", name).param("description", description)
                .param("filter", json.writeValueAsString(filter)).update();
    }

    /** Archives; true when this call archived it, false when it was already archived or is not found. */
    boolean archive(UUID appId, UUID id) {
        return jdbc.sql("""
                        update segments set status = 'archived', archived_at = now(), updated_at = now()
                        where app_id = :app and id = :id and status = 'active'""")
                .param("app", appId).param("id", id).update() == 1;
    }

    Optional<SegmentView> find(UUID appId, UUID id) {
        return jdbc.sql(VIEW + " where s.app_id = :app and s.id = :id")
                .param("app", appId).param("id", id).query(this::view).optional();
    }

    List<SegmentView> list(UUID appId, PageRequest page) {
        return jdbc.sql(VIEW + " where s.app_id = :app order by s.created_at desc, s.id desc limit :limit offset :offset")
                .param("app", appId).param("limit", page.fetchSize()).param("offset", page.offset())
                .query(this::view).list();
    }

    /** A version's filter JSON, when the segment is this app's and has that version. */
    Optional<JsonNode> versionFilter(UUID appId, UUID id, int version) {
        return jdbc.sql("""
                        select v.filter::text from segment_versions v join segments s on s.id = v.segment_id
                        where s.app_id = :app and s.id = :id and v.version = :version""")
                .param("app", appId).param("id", id).param("version", version)
                .query((rs, n) -> json.readTree(rs.getString(1))).optional();
    }

    /**
     * Counts the app's enabled, non-invalidated devices matching a compiled filter. Runs in its own
     * transaction with the compiler's {@code work_mem} (a constant, never input), so its hash joins
     * and hashed user sets stay in memory.
     */
    @Transactional(readOnly = true)
    public long countAudience(UUID appId, FilterCompiler.Compiled filter) {
        jdbc.sql("set local work_mem = '" + FilterCompiler.WORK_MEM + "'").update();
        return jdbc.sql("select count(*) from devices d " + filter.joins()
                        + " where d.app_id = :app and d.enabled and d.invalidated_at is null and (" + filter.predicate() + ")")
                .param("app", appId).params(filter.params()).query(Long.class).single();
    }

    /**
     * The app's enabled, non-invalidated devices on the pages of {@code devices} that a
     * {@code TABLESAMPLE SYSTEM (percent)} picks: what the sampled estimate scales by (see
     * {@link SegmentService#count(UUID, Filter)}). The same pages for the same percentage while the
     * table's pages do not change ({@code REPEATABLE}), so an estimate asked again does not wander.
     */
    @Transactional(readOnly = true)
    public long countSampledDevices(UUID appId, double percent) {
        return jdbc.sql("""
                        select count(*) from devices d tablesample system (cast(:percent as real)) repeatable (0)
                        where d.app_id = :app and d.enabled and d.invalidated_at is null""")
                .param("app", appId).param("percent", percent).query(Long.class).single();
    }

    /** What a sample counted: the app's enabled, non-invalidated devices on its pages, and those the filter selects. */
    record SampleCount(long devices, long matched) {
    }

    /**
     * {@link #countAudience} over the pages of {@code devices} that {@code TABLESAMPLE SYSTEM (percent)}
     * picks (for a smaller percentage, some of the pages {@link #countSampledDevices} counts at a larger
     * one), with the app's devices on them. {@code filter} must be compiled for few devices
     * ({@link FilterCompiler#compileForFew}), and the statement joins by nested loops: each sampled
     * device probes the event and user indexes, where a hash join would read every event row of the
     * key and every user of the app, whatever the sample's size.
     */
    @Transactional(readOnly = true)
    public SampleCount countSampledAudience(UUID appId, FilterCompiler.Compiled filter, double percent) {
        jdbc.sql("set local enable_hashjoin = off").update();
        jdbc.sql("set local enable_mergejoin = off").update();
        return jdbc.sql("select count(*) as devices, count(*) filter (where " + filter.predicate() + ") as matched"
                        + " from devices d tablesample system (cast(:percent as real)) repeatable (0) " + filter.joins()
                        + " where d.app_id = :app and d.enabled and d.invalidated_at is null")
                .param("app", appId).param("percent", percent).params(filter.params())
                .query((rs, n) -> new SampleCount(rs.getLong("devices"), rs.getLong("matched"))).single();
    }

    /**
     * Rows in {@code users} (all apps) as the planner's statistics see them, which is what decides
     * whether PostgreSQL can hash a set of users; from the table's size when never analysed.
     */
    long estimatedUsers() {
        return estimatedRows("users", 64);
    }

    /** Rows in {@code devices} (all apps), the same way: what decides whether an estimate may sample. */
    long estimatedDevices() {
        return estimatedRows("devices", 256);
    }

    /** A table's rows by its statistics, or its size over {@code bytesPerRow} when it was never analysed. */
    private long estimatedRows(String table, int bytesPerRow) {
        return jdbc.sql("""
                        select case when reltuples >= 0 then reltuples::bigint else pg_relation_size(oid) / :bytes end
                        from pg_class where oid = cast(:table as regclass)""")
                .param("table", table).param("bytes", bytesPerRow).query(Long.class).single();
    }

    private SegmentView view(ResultSet rs, int n) throws SQLException {
        return new SegmentView(rs.getObject("id", UUID.class), rs.getString("name"), rs.getString("description"),
                json.readTree(rs.getString("filter")), rs.getInt("current_version"), rs.getString("status"),
                rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("updated_at").toInstant());
    }
}
