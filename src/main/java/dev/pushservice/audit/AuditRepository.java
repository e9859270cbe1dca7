package dev.pushservice.audit;

import java.sql.Array;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import tools.jackson.databind.json.JsonMapper;

/** SQL for {@code audit_log} and {@code org_audit_log}: inserts and reads only (both tables are append-only). */
@Repository
class AuditRepository {

    private final JdbcClient jdbc;
    private final JsonMapper json;

    AuditRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    void insertForOrganisation(UUID orgId, Instant at, AuditLog.Actor actor, String action, String targetType, String targetId,
                               String requestId, List<String> changedFields, Map<String, String> details) {
        jdbc.sql("""
                insert into org_audit_log (org_id, occurred_at, actor, member_id, action, target_type, target_id,
                                           request_id, changed_fields, details)
                values (:org, :at, :actor, :member, :action, :type, :target, :request, :fields, cast(:details as jsonb))""")
                .param("org", orgId)
                .param("at", at.atOffset(ZoneOffset.UTC))
                .param("actor", actor.type())
                .param("member", actor.memberId())
                .param("action", action)
                .param("type", targetType)
                .param("target", targetId)
                .param("request", requestId)
                .param("fields", changedFields.toArray(String[]::new))
                .param("details", json.writeValueAsString(details))
                .update();
    }

    List<AuditLog.OrgEntry> newestOfOrganisation(UUID orgId, AuditLog.Cursor before, int limit) {
        StringBuilder sql = new StringBuilder("""
                select id, occurred_at, actor, member_id, action, target_type, target_id, request_id, changed_fields,
                       details::text as details
                from org_audit_log where org_id = :org""");
        var q = new java.util.LinkedHashMap<String, Object>();
        q.put("org", orgId);
        if (before != null) {
            sql.append(" and (occurred_at, id) < (:at, :id)");
            q.put("at", before.occurredAt().atOffset(ZoneOffset.UTC));
            q.put("id", before.id());
        }
        sql.append(" order by occurred_at desc, id desc limit :limit");
        q.put("limit", limit);
        return jdbc.sql(sql.toString()).params(q).query((rs, n) -> {
            Array fields = rs.getArray("changed_fields");
            List<String> changed = fields == null ? List.of() : List.of((String[]) fields.getArray());
            Map<String, String> details = new TreeMap<>();
            json.readTree(rs.getString("details")).properties().forEach(e -> details.put(e.getKey(), e.getValue().asString()));
            return new AuditLog.OrgEntry(rs.getLong("id"), rs.getObject("occurred_at", java.time.OffsetDateTime.class).toInstant(),
                    rs.getString("actor"), rs.getObject("member_id", UUID.class), rs.getString("action"),
                    rs.getString("target_type"), rs.getString("target_id"), rs.getString("request_id"), changed, details);
        }).list();
    }

    void insert(UUID appId, Instant at, AuditLog.Actor actor, String action, String targetType, String targetId,
                String requestId, List<String> changedFields) {
        jdbc.sql("""
                insert into audit_log (app_id, occurred_at, actor, key_id, key_kind, action, target_type, target_id,
                                       request_id, changed_fields, member_id)
                values (:app, :at, :actor, :key, :kind, :action, :type, :target, :request, :fields, :member)""")
                .param("app", appId)
                .param("at", at.atOffset(ZoneOffset.UTC))
                .param("actor", actor.type())
                .param("key", actor.keyId())
                .param("kind", actor.keyKind())
                .param("action", action)
                .param("type", targetType)
                .param("target", targetId)
                .param("request", requestId)
                .param("fields", changedFields.toArray(String[]::new))
                .param("member", actor.memberId())
                .update();
    }

    List<AuditLog.Entry> newest(UUID appId, String action, AuditLog.Cursor before, int limit) {
        StringBuilder sql = new StringBuilder("""
                select id, occurred_at, actor, key_id, key_kind, member_id, action, target_type, target_id, request_id,
                       changed_fields
                from audit_log where app_id = :app""");
        var q = new java.util.LinkedHashMap<String, Object>();
        q.put("app", appId);
        if (action != null) {
            sql.append(" and action = :action");
            q.put("action", action);
        }
        if (before != null) {
            sql.append(" and (occurred_at, id) < (:at, :id)");
            q.put("at", before.occurredAt().atOffset(ZoneOffset.UTC));
            q.put("id", before.id());
        }
        sql.append(" order by occurred_at desc, id desc limit :limit");
        q.put("limit", limit);
        return jdbc.sql(sql.toString()).params(q).query((rs, n) -> {
            Array fields = rs.getArray("changed_fields");
            List<String> changed = fields == null ? List.of() : List.of((String[]) fields.getArray());
            return new AuditLog.Entry(rs.getLong("id"), rs.getObject("occurred_at", java.time.OffsetDateTime.class).toInstant(),
                    rs.getString("actor"), rs.getObject("key_id", UUID.class), rs.getString("key_kind"),
                    rs.getObject("member_id", UUID.class), rs.getString("action"), rs.getString("target_type"),
                    rs.getString("target_id"), rs.getString("request_id"), changed);
        }).list();
    }
}
