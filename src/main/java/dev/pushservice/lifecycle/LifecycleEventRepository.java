package dev.pushservice.lifecycle;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;

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
        EXPORT_COMPLETED("export.completed"),
        /**
         * A journey execution was created (written by V33's statement trigger on {@code journey_executions},
         * in the transaction that starts it: an event batch or a segment evaluation). Never recorded from Java.
         */
        JOURNEY_EXECUTION_STARTED("journey.execution.started"),
        /** A journey execution reached an {@code exit} or a {@code goal} without {@code next} (the journey worker). */
        JOURNEY_EXECUTION_COMPLETED("journey.execution.completed"),
        /** A journey execution ended {@code failed}, with its reason (the journey worker). */
        JOURNEY_EXECUTION_FAILED("journey.execution.failed"),
        /**
         * A journey execution was cancelled by archiving its journey (written by the archive's own statement,
         * {@code JourneyRepository.cancelExecutions}: any number of rows, never through memory).
         */
        JOURNEY_EXECUTION_CANCELLED("journey.execution.cancelled"),
        /** A journey execution reached a goal node, once per execution and node (the journey worker). */
        JOURNEY_GOAL_REACHED("journey.goal.reached");
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

    /**
     * Records one {@code kind} fact per subject of one app in the caller's transaction (required), with
     * one statement whatever the number of subjects: {@code payloads} in the order of {@code subjectIds}.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public void recordEach(UUID appId, Kind kind, List<UUID> subjectIds, List<? extends Map<String, ?>> payloads, Instant at) {
        if (subjectIds.size() != payloads.size()) throw new IllegalArgumentException("one payload per subject");
        if (subjectIds.isEmpty()) return;
        UUID[] subjects = subjectIds.toArray(UUID[]::new);
        String[] texts = new String[payloads.size()];
        for (int i = 0; i < texts.length; i++) texts[i] = json.writeValueAsString(payloads.get(i));
        jdbc.sql("""
                        insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
                        select :app, :kind, f.subject, cast(f.payload as jsonb), :at
                        from unnest(cast(:subjects as uuid[]), cast(:payloads as text[])) with ordinality as f(subject, payload, n)
                        order by f.n""")
                .param("app", appId).param("kind", kind.wire()).param("subjects", subjects).param("payloads", texts)
                .param("at", java.time.OffsetDateTime.ofInstant(at, java.time.ZoneOffset.UTC))
                .update();
    }

    /** A fact about one subject of an app, to record with others of a batch ({@link #recordSubscribed}). */
    public record SubjectFact(UUID appId, Kind kind, UUID subjectId, Map<String, ?> payload) {
    }

    /**
     * Records {@code facts} (any apps and subjects) in the caller's transaction (required), in their
     * order, with ONE statement, keeping only those whose app has an enabled webhook subscribed to the
     * kind (or to {@code *}), as V16 does for engagement facts: journey facts come several per
     * execution, and nothing but webhooks reads them, so an app without such a webhook pays no row.
     * A webhook receives only facts recorded after its creation anyway; as with engagement facts, one
     * disabled when a fact is recorded never gets it, even if enabled again before the relay passes.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public void recordSubscribed(List<SubjectFact> facts, Instant at) {
        if (facts.isEmpty()) return;
        ArrayNode rows = JsonNodeFactory.instance.arrayNode();
        for (SubjectFact f : facts) {
            rows.addObject().put("app_id", f.appId().toString()).put("kind", f.kind().wire())
                    .put("subject_id", f.subjectId().toString()).set("payload", json.valueToTree(f.payload()));
        }
        jdbc.sql("""
                        insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
                        select f.app_id, f.kind, f.subject_id, f.payload, :at
                        from (select cast(x.fact ->> 'app_id' as uuid) as app_id, x.fact ->> 'kind' as kind,
                                     cast(x.fact ->> 'subject_id' as uuid) as subject_id, x.fact -> 'payload' as payload, x.n
                              from jsonb_array_elements(cast(:rows as jsonb)) with ordinality as x(fact, n)) f
                        where exists (select 1 from webhooks w
                                      where w.app_id = f.app_id and w.enabled
                                        and (f.kind = any(w.events) or '*' = any(w.events)))
                        order by f.n""")
                .param("rows", json.writeValueAsString(rows))
                .param("at", java.time.OffsetDateTime.ofInstant(at, java.time.ZoneOffset.UTC))
                .update();
    }

    /**
     * The apps among {@code appIds} with an enabled webhook subscribed to at least one of {@code kinds}
     * (or to {@code *}), in one statement: lets a writer of many facts build only those
     * {@link #recordSubscribed} would keep.
     */
    public Set<UUID> appsSubscribed(Collection<UUID> appIds, Collection<Kind> kinds) {
        if (appIds.isEmpty() || kinds.isEmpty()) return Set.of();
        return Set.copyOf(jdbc.sql("""
                        select distinct w.app_id from webhooks w
                        where w.app_id = any(cast(:apps as uuid[])) and w.enabled
                          and (w.events && cast(:kinds as text[]) or '*' = any(w.events))""")
                .param("apps", appIds.stream().map(UUID::toString).collect(Collectors.joining(",", "{", "}")))
                .param("kinds", kinds.stream().map(Kind::wire).collect(Collectors.joining(",", "{", "}")))
                .query(UUID.class).list());
    }
}
