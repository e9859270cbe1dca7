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
     * Rows in {@code users} (all apps) as the planner's statistics see them, which is what decides
     * whether PostgreSQL can hash a set of users; from the table's size when never analysed.
     */
    long estimatedUsers() {
        return jdbc.sql("""
                        select case when reltuples >= 0 then reltuples::bigint else pg_relation_size(oid) / 64 end
                        from pg_class where oid = 'users'::regclass""")
                .query(Long.class).single();
    }

    private SegmentView view(ResultSet rs, int n) throws SQLException {
        return new SegmentView(rs.getObject("id", UUID.class), rs.getString("name"), rs.getString("description"),
                json.readTree(rs.getString("filter")), rs.getInt("current_version"), rs.getString("status"),
                rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("updated_at").toInstant());
    }
}
