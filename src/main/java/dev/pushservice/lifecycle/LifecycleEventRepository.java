package dev.pushservice.lifecycle;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes and reads lifecycle facts (the outbox). {@link #record} must run inside the transaction
 * that makes the change, so the fact and the change commit or roll back together; it refuses to run
 * without one. Thread-safe.
 */
@Repository
public class LifecycleEventRepository {

    /** What happened. {@link #wire()} is the stored and published name. */
    public enum Kind {
        NOTIFICATION_CREATED("notification.created"),
        NOTIFICATION_QUEUED("notification.queued"),
        NOTIFICATION_PROCESSING("notification.processing"),
        NOTIFICATION_COMPLETED("notification.completed"),
        NOTIFICATION_FAILED("notification.failed"),
        NOTIFICATION_CANCELLED("notification.cancelled"),
        /** A new device (written by the {@code devices_registered} trigger of V16, in the registering transaction). */
        DEVICE_REGISTERED("device.registered"),
        /** A device disabled through the API ({@code DELETE /v1/devices/{id}}). */
        DEVICE_DISABLED("device.disabled"),
        /** A user deleted through the API; its devices were disabled and detached with it. */
        USER_DELETED("user.deleted"),
        /** A provider said a device's token is invalid (written by delivery). */
        DEVICE_INVALIDATED("device.invalidated"),
        /** An export's file is ready to download (written by the export task). */
        EXPORT_COMPLETED("export.completed");
        // Engagement facts ("event.<event_type>") are written by the events_recorded trigger of V16,
        // one set-based insert per batch, and only for apps with an enabled webhook subscribed to them.

        private final String wire;

        Kind(String wire) {
            this.wire = wire;
        }

        public String wire() {
            return wire;
        }
    }

    /** One stored fact. {@code payload} is a small JSON object (ids, counts, reason codes; never a token). */
    public record Fact(long id, UUID appId, String kind, UUID subjectId, JsonNode payload, Instant occurredAt) {
    }

    private final JdbcClient jdbc;
    private final JsonMapper json;

    LifecycleEventRepository(JdbcClient jdbc, JsonMapper json) {
        this.jdbc = jdbc;
        this.json = json;
    }

    /**
     * This repository over {@code other}, another pool of the same database (the delivery pool,
     * {@link dev.pushservice.platform.db.DeliveryDatabase}), for code whose transactions run there.
     * Its {@link #record} joins the transaction open on that pool; the caller must have one (the
     * {@code @Transactional} check of this bean applies to the API pool's transactions only).
     */
    public LifecycleEventRepository on(JdbcClient other) {
        return new LifecycleEventRepository(other, json);
    }

    /** Records a fact in the caller's transaction (required). */
    @Transactional(propagation = Propagation.MANDATORY)
    public void record(UUID appId, Kind kind, UUID subjectId, Map<String, ?> payload, Instant at) {
        jdbc.sql("""
                        insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
                        values (:app, :kind, :subject, cast(:payload as jsonb), :at)""")
                .param("app", appId).param("kind", kind.wire()).param("subject", subjectId)
                .param("payload", json.writeValueAsString(payload)).param("at", java.time.OffsetDateTime.ofInstant(at, java.time.ZoneOffset.UTC))
                .update();
    }

    /** A fact to record with others about the same subject ({@link #recordAll}). */
    public record NewFact(Kind kind, Map<String, ?> payload) {
    }

    /** Records {@code facts} about one subject in the caller's transaction (required), in their order, with one statement. */
    @Transactional(propagation = Propagation.MANDATORY)
    public void recordAll(UUID appId, UUID subjectId, Instant at, List<NewFact> facts) {
        String[] kinds = new String[facts.size()];
        String[] payloads = new String[facts.size()];
        for (int i = 0; i < facts.size(); i++) {
            kinds[i] = facts.get(i).kind().wire();
            payloads[i] = json.writeValueAsString(facts.get(i).payload());
        }
        jdbc.sql("""
                        insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
                        select :app, f.kind, :subject, cast(f.payload as jsonb), :at
                        from unnest(cast(:kinds as text[]), cast(:payloads as text[])) with ordinality as f(kind, payload, n)
                        order by f.n""")
                .param("app", appId).param("subject", subjectId).param("kinds", kinds).param("payloads", payloads)
                .param("at", java.time.OffsetDateTime.ofInstant(at, java.time.ZoneOffset.UTC))
                .update();
    }

    /** Facts of one app with an id above {@code afterId}, oldest first, at most {@code limit}. */
    public List<Fact> after(UUID appId, long afterId, int limit) {
        return jdbc.sql("""
                        select id, app_id, kind, subject_id, payload::text as payload, occurred_at
                        from lifecycle_events where app_id = :app and id > :after order by id limit :limit""")
                .param("app", appId).param("after", afterId).param("limit", limit)
                .query((rs, n) -> new Fact(rs.getLong("id"), rs.getObject("app_id", UUID.class), rs.getString("kind"),
                        rs.getObject("subject_id", UUID.class), json.readTree(rs.getString("payload")),
                        rs.getTimestamp("occurred_at").toInstant()))
                .list();
    }
}
