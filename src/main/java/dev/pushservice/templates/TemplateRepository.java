package dev.pushservice.templates;

import java.sql.Timestamp;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/**
 * SQL for templates. Every statement filters by app. {@code templates} holds the current
 * metadata; {@code template_versions} holds every version (name, status and content), append-only.
 */
@Repository
class TemplateRepository {

    private final JdbcClient jdbc;

    TemplateRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** The current version of a template; {@code content} is the stored JSON text. */
    record Row(UUID id, String name, String status, int version, String content, Timestamp createdAt, Timestamp updatedAt) {
    }

    record SummaryRow(UUID id, String name, String status, int version, Timestamp createdAt, Timestamp updatedAt) {
    }

    enum Lock {
        NONE(""), SHARE(" for share"), UPDATE(" for update");

        final String sql;

        Lock(String sql) {
            this.sql = sql;
        }
    }

    void insert(UUID appId, UUID id, String name, String status, String content) {
        jdbc.sql("insert into templates (id, app_id, name, status, version) values (:id, :app, :name, :status, 1)")
                .param("id", id).param("app", appId).param("name", name).param("status", status).update();
        insertVersion(appId, id, 1, name, status, content);
    }

    Optional<Row> find(UUID appId, UUID id, Lock lock) {
        // Lock the template row alone, then read: a locking join would be re-checked against the
        // version row read before the wait, so a concurrent change would make the template vanish.
        if (lock != Lock.NONE && jdbc.sql("select id from templates where app_id = :app and id = :id" + lock.sql)
                .param("app", appId).param("id", id).query(UUID.class).optional().isEmpty()) {
            return Optional.empty();
        }
        return jdbc.sql("""
                        select t.id, t.name, t.status, t.version, v.content::text as content, t.created_at, t.updated_at
                        from templates t
                        join template_versions v on v.template_id = t.id and v.version = t.version
                        where t.app_id = :app and t.id = :id""")
                .param("app", appId).param("id", id)
                .query(Row.class).optional();
    }

    /** Appends version {@code version} and makes it current; the caller holds the template's row lock. */
    void addVersion(UUID appId, UUID id, int version, String name, String status, String content) {
        insertVersion(appId, id, version, name, status, content);
        jdbc.sql("""
                        update templates set name = :name, status = :status, version = :version, updated_at = now()
                        where app_id = :app and id = :id""")
                .param("app", appId).param("id", id).param("name", name).param("status", status).param("version", version)
                .update();
    }

    private void insertVersion(UUID appId, UUID id, int version, String name, String status, String content) {
        jdbc.sql("""
                        insert into template_versions (app_id, template_id, version, name, status, content)
                        values (:app, :id, :version, :name, :status, cast(:content as jsonb))""")
                .param("app", appId).param("id", id).param("version", version).param("name", name).param("status", status)
                .param("content", content)
                .update();
    }

    /** Newest first; {@code limit} rows from {@code offset}. */
    List<SummaryRow> list(UUID appId, int limit, long offset) {
        return jdbc.sql("""
                        select id, name, status, version, created_at, updated_at from templates
                        where app_id = :app order by created_at desc, id desc limit :limit offset :offset""")
                .param("app", appId).param("limit", limit).param("offset", offset)
                .query(SummaryRow.class).list();
    }
}
