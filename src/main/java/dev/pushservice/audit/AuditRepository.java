package dev.pushservice.audit;

import java.sql.Array;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;

/** SQL for {@code audit_log}: inserts only (the table is append-only). */
@Repository
class AuditRepository {

    private final JdbcClient jdbc;

    AuditRepository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    void insert(UUID appId, Instant at, AuditLog.Actor actor, String action, String targetType, String targetId,
                String requestId, List<String> changedFields) {
        jdbc.sql("""
                insert into audit_log (app_id, occurred_at, actor, key_id, key_kind, member_id, action, target_type, target_id,
                                       request_id, changed_fields)
                values (:app, :at, :actor, :key, :kind, :member, :action, :type, :target, :request, :fields)""")
                .param("app", appId)
                .param("at", at.atOffset(ZoneOffset.UTC))
                .param("actor", actor.type())
                .param("key", actor.keyId())
                .param("kind", actor.keyKind())
                .param("member", actor.memberId())
                .param("action", action)
                .param("type", targetType)
                .param("target", targetId)
                .param("request", requestId)
                .param("fields", changedFields.toArray(String[]::new))
                .update();
    }
}
