package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.apps.NotificationDefaults;
import dev.pushservice.audit.AuditLog;
import dev.pushservice.events.EventReads;
import dev.pushservice.events.NotificationReferences;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.lifecycle.LifecycleEventRepository.Kind;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import dev.pushservice.platform.storage.Uuid7;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentVersion;
import dev.pushservice.templates.TemplateContent;
import dev.pushservice.templates.TemplateService;
import dev.pushservice.templates.TemplateSnapshot;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import dev.pushservice.platform.jobs.JobRunner;
import org.slf4j.Logger;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Notifications: creation (validation against the app's data, template resolution, snapshots,
 * idempotency), cancel, reads, and the state changes the pipeline makes ({@link #finishIfDone}).
 * Every state change writes its lifecycle fact ({@link LifecycleEventRepository}) in the same transaction.
 * Thread-safe.
 */
@Service
public class NotificationService implements NotificationReferences {

    private static final Logger log = LoggerFactory.getLogger(NotificationService.class);

    static final String DRAFT = "draft";
    static final String QUEUED = "queued";
    static final String PROCESSING = "processing";
    static final String COMPLETED = "completed";
    static final String FAILED = "failed";
    static final String CANCELLED = "cancelled";
    static final Set<String> TERMINAL = Set.of(COMPLETED, FAILED, CANCELLED);
    static final List<String> RECIPIENT_STATES =
            List.of("pending", "sending", "accepted", "failed", "invalid_token", "cancelled", "expired", "skipped_frequency_cap");
    private static final Set<String> FAILED_STATES = Set.of("failed", "invalid_token", "expired");

    private final NotificationRepository notifications;
    private final SegmentService segments;
    private final TemplateService templates;
    private final LifecycleEventRepository lifecycle;
    private final SchedulerClient scheduler;
    private final AuditLog audit;
    private final EventReads events;
    private final Clock clock;
    private final ObjectProvider<JobRunner> jobs;
    private final ObjectProvider<DeliveryHandoff> delivery;
    private final AppSettingsService settings;
    private final FrequencyCapping caps;
    private final ObjectProvider<NotificationFanOut> fanOut;
    private final CancelRepository cancels;

    NotificationService(NotificationRepository notifications, SegmentService segments, TemplateService templates,
                        LifecycleEventRepository lifecycle, SchedulerClient scheduler, EventReads events, Clock clock,
                        ObjectProvider<JobRunner> jobs, ObjectProvider<DeliveryHandoff> delivery, AuditLog audit,
                        AppSettingsService settings, FrequencyCapping caps, ObjectProvider<NotificationFanOut> fanOut,
                        CancelRepository cancels) {
        this.fanOut = fanOut;
        this.cancels = cancels;
        this.settings = settings;
        this.caps = caps;
        this.jobs = jobs;
        this.delivery = delivery;
        this.audit = audit;
        this.notifications = notifications;
        this.segments = segments;
        this.templates = templates;
        this.lifecycle = lifecycle;
        this.scheduler = scheduler;
        this.events = events;
        this.clock = clock;
    }

    /**
     * Creates a notification, or replays the one created earlier with the same idempotency key.
     * One transaction: the notification, its lifecycle facts and its fan-out task commit together;
     * for a tiny audience known at creation ({@link #materializesAtCreation}) its recipients instead,
     * materialized by the fan-out's own code in this transaction, delivery woken after the commit.
     * A concurrent request with the same key waits on the unique index and then replays.
     *
     * @throws InvalidInput a reference is unknown, another app's or archived; title or body
     *         missing after template resolution; the key was used with a different body
     */
    @Transactional
    public NotificationView.Created create(UUID appId, String idempotencyKey, NotificationRequest request) {
        var existing = notifications.findByKey(appId, idempotencyKey);
        if (existing.isPresent()) return replay(existing.get(), request);

        Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS);
        Prepared prepared = prepare(appId, request, List.of());
        TemplateSnapshot template = prepared.template();
        String level = prepared.interruptionLevel();
        String priority = prepared.priority();
        ObjectNode content = prepared.content();
        ObjectNode audience = prepared.audience();
        NotificationRequest.Target target = request.target();
        boolean scheduled = request.scheduledAt() != null && request.scheduledAt().isAfter(now);
        String status = scheduled ? DRAFT : QUEUED;
        // a draft gets its fan-out task when it is due (queueDueDrafts); a tiny audience known now is
        // materialized in this transaction (no task, no scheduler hop: stored processing at once), any
        // other by the fan-out task
        boolean materializeNow = !scheduled && materializesAtCreation(request);
        // time-ordered by the audience time: its recipients' partition (docs/storage.md)
        UUID id = Uuid7.at(scheduled ? request.scheduledAt() : now);
        var row = new NotificationRepository.NewNotification(id, appId, idempotencyKey, request.hash(), request.name(),
                materializeNow ? PROCESSING : status, priority, level, content, template == null ? null : template.templateId(),
                template == null ? null : template.version(), audience, prepared.ttl(), request.localDeliveryTime(),
                request.frequencyCapOverride(), request.scheduledAt(), scheduled ? request.scheduledAt() : now, now,
                scheduled ? null : now, materializeNow ? now : null);
        if (!notifications.insert(row)) {
            // a concurrent request with this key committed first: it is the original
            return replay(notifications.findByKey(appId, idempotencyKey)
                    .orElseThrow(() -> new IllegalStateException("idempotency key conflict without a row")), request);
        }
        lifecycle.recordAll(appId, id, now, creationFacts(id, status, materializeNow));
        if (materializeNow) {
            log.info("Notification {} processing: materializing recipients at creation", id);
            fanOut.getObject().materializeNow(appId, id);
        } else if (!scheduled) {
            enqueueFanOut(appId, id, priority);
        }
        List<String> fields = new ArrayList<>(List.of("audience", "content", "priority", "status"));
        if (template != null) fields.add("template_id");
        if (request.scheduledAt() != null) fields.add("scheduled_at");
        audit.record(appId, "notification.create", "notification", id, fields);
        log.info("Notification {} created ({}, priority {}, target {})", id, status, priority, target.type());
        return new NotificationView.Created(id, status, level, request.scheduledAt(), now, false);
    }

    /**
     * The lifecycle facts of a creation, in order: created (with the status it was created in), then
     * for an immediate notification queued, and for one materialized at creation processing (its
     * row is stored processing at once: the fan-out that follows in the same transaction finds it so).
     */
    private static List<LifecycleEventRepository.NewFact> creationFacts(UUID id, String status, boolean materializeNow) {
        List<LifecycleEventRepository.NewFact> facts = new ArrayList<>(3);
        facts.add(new LifecycleEventRepository.NewFact(Kind.NOTIFICATION_CREATED, Map.of("notification_id", id, "status", status)));
        if (!DRAFT.equals(status)) facts.add(new LifecycleEventRepository.NewFact(Kind.NOTIFICATION_QUEUED, Map.of("notification_id", id)));
        if (materializeNow) facts.add(new LifecycleEventRepository.NewFact(Kind.NOTIFICATION_PROCESSING, Map.of("notification_id", id)));
        return facts;
    }

    /**
     * Whether an immediate notification's recipients are materialized in its creation transaction
     * (docs/api-decisions.md "Immediate fan-out for tiny audiences"): a {@code device} target (one
     * device at most) or a {@code user} target (that user's devices), without included or excluded
     * segments (evaluating a segment can read the app's whole device table: the task does that).
     */
    static boolean materializesAtCreation(NotificationRequest request) {
        String type = request.target().type();
        return ("device".equals(type) || "user".equals(type))
                && (request.includedSegmentIds() == null || request.includedSegmentIds().isEmpty())
                && (request.excludedSegmentIds() == null || request.excludedSegmentIds().isEmpty());
    }

    /** The content fields a notification made by the service itself ({@link #createForUsers}) keeps. */
    private static final List<String> CONTENT_FIELDS = List.of("title", "body", "image_url", "click_url", "data",
            "localizations", "template_data", "collapse_id", "sound", "badge", "category", "actions",
            "content_available", "platform_overrides");

    /**
     * Creates a notification for the enabled devices of the given users and materializes its
     * recipients at once, in the caller's transaction (it must run in one: the notification, its
     * lifecycle facts and its recipients commit or roll back with the caller's own writes, so a
     * retried caller never sends twice). For work the service does itself, e.g. a journey's push
     * step; the request path's checks are the caller's (content comes already validated).
     *
     * <p>Everything else is as for {@code POST /v1/notifications}: the app's notification defaults
     * fill {@code priority}, {@code interruption_level}, {@code ttl} and {@code sound}; fan-out
     * ({@link NotificationFanOut}) decides each recipient's send time (local time, quiet hours,
     * throttle) and freezes render values for placeholders and localizations, set-based; delivery
     * applies frequency caps and is woken after the commit through {@link DeliveryHandoff}. Reads
     * show it with {@code target} as given here, with no segments and no template.
     *
     * @param content a content object with {@code title} and {@code body}; fields other than
     *                {@link #CONTENT_FIELDS} are left out
     * @param priority null for the app's default
     * @param interruptionLevel null for the app's default
     * @param userIds users of the app (unknown ids simply have no devices)
     * @param target how reads show who it was for: an object with a {@code type} no request can
     *               give (e.g. {@code {"type":"journey",…}})
     * @return the notification's id
     */
    @Transactional(propagation = org.springframework.transaction.annotation.Propagation.MANDATORY)
    public UUID createForUsers(UUID appId, JsonNode content, String priority, String interruptionLevel,
                               java.util.Collection<UUID> userIds, ObjectNode target) {
        Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS);
        NotificationDefaults defaults = settings.notificationDefaults(appId);
        String level = first(interruptionLevel, defaults.interruptionLevel(), "active");
        String resolvedPriority = first(priority, defaults.priority(), "normal");
        ObjectNode snapshot = JsonNodeFactory.instance.objectNode();
        for (String field : CONTENT_FIELDS) {
            JsonNode value = content.get(field);
            if (value != null && !value.isNull()) snapshot.set(field, value);
        }
        if (!snapshot.has("sound")) putText(snapshot, "sound", defaults.sound());
        ObjectNode audience = JsonNodeFactory.instance.objectNode();
        audience.set("target", target);
        audience.set("included", JsonNodeFactory.instance.arrayNode());
        audience.set("excluded", JsonNodeFactory.instance.arrayNode());
        ArrayNode users = audience.putArray(NotificationFanOut.AUDIENCE_USERS);
        userIds.forEach(u -> users.add(u.toString()));
        UUID id = Uuid7.at(now);
        byte[] hash;
        try {
            hash = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(snapshot.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        // the key is the notification's own id: no request can replay it
        var row = new NotificationRepository.NewNotification(id, appId, "service:" + id, hash, null, PROCESSING,
                resolvedPriority, level, snapshot, null, null, audience, defaults.ttl(), null, false, null, now, now, now, now);
        if (!notifications.insert(row)) throw new IllegalStateException("notification id collision");
        lifecycle.recordAll(appId, id, now, creationFacts(id, QUEUED, true));
        log.info("Notification {} processing: materializing recipients at creation", id);
        // fan-out in this transaction: every page joins it, so the recipients commit with the caller
        fanOut.getObject().materializeNow(appId, id);
        return id;
    }

    /**
     * A creation body checked against the app's data, as creation and preview share it: target
     * identifiers, segments (their active versions snapshotted into the audience), the template
     * (content resolved under the request's fields), title and body after template resolution.
     *
     * @param problems found by the caller beforehand (reported in the same 422)
     * @throws InvalidInput with every problem found
     */
    Prepared prepare(UUID appId, NotificationRequest request, List<Violation> problems) {
        problems = new ArrayList<>(problems);
        NotificationRequest.Target target = request.target();
        ObjectNode audience = JsonNodeFactory.instance.objectNode();
        audience.set("target", target.toJson());
        switch (target.type()) {
            case "device" -> {
                if (!notifications.deviceExists(appId, target.deviceId())) {
                    problems.add(new Violation("target.device_id", "no device with this id exists in this app"));
                }
            }
            case "user" -> {
                if (!notifications.userExists(appId, target.externalUserId())) {
                    problems.add(new Violation("target.external_user_id", "no user with this external_user_id exists in this app"));
                }
            }
            case "segment" -> {
                SegmentVersion v = segment(appId, target.segmentId(), "target.segment_id", problems);
                if (v != null) audience.set("segment", segmentJson(v));
            }
            default -> {
            }
        }
        audience.set("included", segmentList(appId, request.includedSegmentIds(), "included_segment_ids", problems));
        audience.set("excluded", segmentList(appId, request.excludedSegmentIds(), "excluded_segment_ids", problems));

        TemplateSnapshot template = null;
        if (request.templateId() != null) {
            template = attempt(() -> templates.forNotification(appId, request.templateId()), problems);
        }
        TemplateContent base = template == null ? null : template.content();
        String title = request.title() != null ? request.title() : base == null ? null : base.title();
        String body = request.body() != null ? request.body() : base == null ? null : base.body();
        if (title == null) problems.add(new Violation("title", "is required (in the request or from the template)"));
        if (body == null) problems.add(new Violation("body", "is required (in the request or from the template)"));
        if (!problems.isEmpty()) throw new InvalidInput(problems);

        // request > template > the app's notification defaults > built-in
        NotificationDefaults defaults = settings.notificationDefaults(appId);
        String level = first(request.interruptionLevel(), base == null ? null : base.interruptionLevel(),
                defaults.interruptionLevel(), "active");
        String priority = first(request.priority(), defaults.priority(), "normal");
        Integer ttl = first(request.ttl(), defaults.ttl());
        ObjectNode content = content(request, base, title, body);
        putText(content, "sound", first(request.sound(), defaults.sound()));
        return new Prepared(audience, template, level, priority, ttl, content);
    }

    /**
     * A creation body ready to store or preview, the app's notification defaults applied.
     *
     * @param audience the audience snapshot (target, segment versions)
     * @param template null without {@code template_id}
     * @param interruptionLevel resolved: request, else template, else the app's default, else {@code active}
     * @param priority resolved: request, else the app's default, else {@code normal}
     * @param ttl resolved: request, else the app's default; null for none
     * @param content the content snapshot: request fields over the template's (the default sound applied)
     */
    record Prepared(ObjectNode audience, TemplateSnapshot template, String interruptionLevel, String priority,
                    Integer ttl, ObjectNode content) {
    }

    /**
     * Queues every draft whose {@code scheduled_at} has come by the application clock, with its
     * lifecycle fact and its fan-out task, in one transaction per batch. Run every second by
     * {@link DueDrafts}; returns how many it queued.
     */
    @Transactional
    public int queueDueDrafts(int limit) {
        Instant now = clock.instant();
        List<NotificationRepository.Due> due = notifications.queueDueDrafts(now, limit);
        for (NotificationRepository.Due d : due) {
            lifecycle.record(d.appId(), Kind.NOTIFICATION_QUEUED, d.id(), Map.of("notification_id", d.id()), now);
            enqueueFanOut(d.appId(), d.id(), d.priority());
            log.info("Notification {} due: queued", d.id());
        }
        return due.size();
    }

    /**
     * Enqueues the fan-out task in the caller's transaction. Its execution time is in db-scheduler's
     * time base (the system clock, see platform/jobs), not the application clock: "now" for the
     * scheduler. Higher priorities are fetched first.
     */
    private void enqueueFanOut(UUID appId, UUID id, String priority) {
        int rank = switch (priority) {
            case "transactional" -> 30;
            case "high" -> 20;
            case "normal" -> 10;
            default -> 0;
        };
        scheduler.scheduleIfNotExists(NotificationFanOut.TASK.instance(id.toString())
                .data(new NotificationFanOut.Data(appId, id)).priority(rank).scheduledTo(Instant.now()));
        // the fan-out starts right after this commit, not at the next poll
        jobs.orderedStream().forEach(JobRunner::checkForDueWorkAfterCommit);
    }

    private NotificationView.Created replay(NotificationRepository.Row original, NotificationRequest request) {
        if (!Arrays.equals(original.requestHash(), request.hash())) {
            throw InvalidInput.of("Idempotency-Key",
                    "was already used for a different request body; use a new key for a new notification");
        }
        boolean wasScheduled = original.scheduledAt() != null && original.scheduledAt().isAfter(original.createdAt());
        return new NotificationView.Created(original.id(), wasScheduled ? DRAFT : QUEUED, original.interruptionLevel(),
                original.scheduledAt(), original.createdAt(), true);
    }

    private SegmentVersion segment(UUID appId, UUID segmentId, String field, List<Violation> problems) {
        return attempt(() -> segments.activeVersion(appId, segmentId, field), problems);
    }

    private ArrayNode segmentList(UUID appId, List<UUID> ids, String field, List<Violation> problems) {
        ArrayNode list = JsonNodeFactory.instance.arrayNode();
        for (int i = 0; i < ids.size(); i++) {
            SegmentVersion v = segment(appId, ids.get(i), field + "[" + i + "]", problems);
            if (v != null) list.add(segmentJson(v));
        }
        return list;
    }

    private static ObjectNode segmentJson(SegmentVersion v) {
        ObjectNode node = JsonNodeFactory.instance.objectNode();
        node.put("segment_id", v.segmentId().toString());
        node.put("version", v.version());
        node.set("filter", v.filterJson());
        return node;
    }

    /** Runs a lookup of another feature whose refusal is a validation problem of this request. */
    private static <T> T attempt(Supplier<T> lookup, List<Violation> problems) {
        try {
            return lookup.get();
        } catch (InvalidInput e) {
            problems.addAll(e.violations());
        }
        return null;
    }

    /** The content snapshot: request fields over the template's. */
    private static ObjectNode content(NotificationRequest r, TemplateContent base, String title, String body) {
        ObjectNode c = JsonNodeFactory.instance.objectNode();
        c.put("title", title);
        c.put("body", body);
        putText(c, "image_url", r.imageUrl());
        putText(c, "click_url", r.clickUrl() != null ? r.clickUrl() : base == null ? null : base.clickUrl());
        JsonNode data = r.data() != null ? r.data() : base == null ? null : base.data();
        if (data != null) c.set("data", data);
        if (r.localizations() != null && !r.localizations().isEmpty()) c.set("localizations", r.localizations());
        if (r.templateData() != null) c.set("template_data", r.templateData());
        putText(c, "collapse_id", r.collapseId());
        if (r.badge() != null) c.put("badge", r.badge());
        putText(c, "category", r.category());
        if (r.actions() != null && !r.actions().isEmpty()) c.set("actions", r.actions());
        if (r.contentAvailable() != null) c.put("content_available", r.contentAvailable());
        if (r.platformOverrides() != null && !r.platformOverrides().isEmpty()) c.set("platform_overrides", r.platformOverrides());
        return c;
    }

    /** The first value that is not null (the last is the built-in default, or null for none). */
    @SafeVarargs
    private static <T> T first(T... values) {
        for (T v : values) if (v != null) return v;
        return null;
    }

    private static void putText(ObjectNode node, String field, String value) {
        if (value != null) node.put(field, value);
    }

    /**
     * Cancels a draft, queued or processing notification. A draft or queued one has no recipients yet:
     * it is finished here, with its counts and its {@code notification.cancelled} fact. A processing one
     * is marked {@code cancelled} at once, by one keyed update that touches no recipient row, and its
     * {@code pending} recipients are left to the background task {@link NotificationCancels}, enqueued
     * in this transaction, which cancels them in batches and then records the fact. From this commit
     * nothing more is sent: no lane claims a cancelled notification's recipients, the fan-out stops
     * at its next page, and the recipients this process claimed or was handed but has not given to a
     * provider yet are dropped (told after the commit, before the answer). Recipients already handed
     * over ({@code sending}) finish as the provider answers. The answer's counts are those of the
     * moment: recipients still {@code pending} there are never sent and become {@code cancelled}
     * shortly (docs/api-decisions.md).
     *
     * @throws NotFound unknown or another app's
     * @throws InvalidInput the notification is already terminal
     */
    @Transactional
    public NotificationView cancel(UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElseThrow(() -> new NotFound("Notification"));
        if (row.terminal()) {
            throw InvalidInput.of("notification_id", "the notification is " + row.status()
                    + "; only draft, queued or processing notifications can be cancelled");
        }
        Instant now = clock.instant();
        if (PROCESSING.equals(row.status())) {
            cancels.markCancelling(appId, id, now);
            scheduler.scheduleIfNotExists(NotificationCancels.TASK.instance(id.toString())
                    .data(new NotificationCancels.Data(appId, id)).scheduledTo(Instant.now()));
            // the background starts right after this commit, not at the next poll
            jobs.orderedStream().forEach(JobRunner::checkForDueWorkAfterCommit);
            log.info("Notification {} cancelled from {}; its pending recipients are cancelled in the background", id,
                    row.status());
        } else {
            // draft or queued: nothing was materialized (the fan-out moves it to processing first)
            int cancelled = notifications.cancelPending(appId, id, now);
            caps.cancelled(id);
            List<NotificationRepository.Count> counts = notifications.counts(appId, List.of(id));
            boolean inFlight = counts.stream().anyMatch(c -> "sending".equals(c.status()));
            notifications.finish(appId, id, CANCELLED, now, inFlight ? null : summary(counts));
            if (!inFlight) notifications.storeReport(appId, id, sendStart(row), now);
            lifecycle.record(appId, Kind.NOTIFICATION_CANCELLED, id,
                    Map.of("notification_id", id, "previous_status", row.status(), "recipients_cancelled", cancelled), now);
            log.info("Notification {} cancelled from {}", id, row.status());
        }
        audit.record(appId, "notification.cancel", "notification", id, List.of("status"));
        // recipients claimed by delivery in this process but not yet handed to a provider are dropped too
        DeliveryHandoff handoff = delivery.getIfAvailable();
        if (handoff != null) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    handoff.cancelled(appId, id);
                }
            });
        }
        return get(appId, id);
    }

    /**
     * Finishes the cancel of a processing notification once its background task left nothing
     * pending ({@link NotificationCancels}): records its {@code notification.cancelled} fact
     * ({@code recipients_cancelled}: what the task's last run cancelled) and, when nothing of it is
     * in flight, its final counts. Once per cancel: does nothing when it is not cancelling any more.
     */
    @Transactional
    public void finishCancel(UUID appId, UUID id, long recipientsCancelled) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElse(null);
        if (row == null || !cancels.endCancelling(appId, id)) return;
        List<NotificationRepository.Count> counts = finalCounts(notifications, appId, id);
        if (counts != null) {
            notifications.storeSummary(appId, id, summary(counts));
            notifications.storeReport(appId, id, sendStart(row), row.finishedAt());
        }
        lifecycle.record(appId, Kind.NOTIFICATION_CANCELLED, id, Map.of("notification_id", id,
                "previous_status", PROCESSING, "recipients_cancelled", recipientsCancelled), clock.instant());
        log.info("Notification {}: cancel finished, {} pending recipient(s) cancelled in the background{}", id,
                recipientsCancelled, counts == null ? "; recipients still in flight" : "");
    }

    /**
     * Moves a processing notification whose recipients are all materialized and terminal to its
     * terminal state, with its exact counts: {@code failed} when recipients failed and none was
     * accepted, else {@code completed} (also with zero recipients). Does nothing otherwise. Called
     * by fan-out (zero recipients) and by delivery after it made recipients terminal. A cancelled
     * notification still without its summary gets it here once nothing of it is in flight.
     */
    @Transactional
    public void finishIfDone(UUID appId, UUID id) {
        finishIfDone(notifications, lifecycle, appId, id);
    }

    /**
     * {@link #finishIfDone(UUID, UUID)} over {@code notifications} and {@code lifecycle} (repositories of
     * either pool), in the caller's transaction on their pool: delivery's recorder finishes
     * notifications on the delivery pool, so an API overload never stalls it.
     */
    void finishIfDone(NotificationRepository notifications, LifecycleEventRepository lifecycle, UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElse(null);
        if (row != null && CANCELLED.equals(row.status()) && row.summary() == null) {
            // cancelled with recipients in flight: its counts are stored once they are final; status,
            // timestamps and lifecycle facts stay as the cancel left them
            List<NotificationRepository.Count> counts = finalCounts(notifications, appId, id);
            if (counts != null) {
                notifications.storeSummary(appId, id, summary(counts));
                notifications.storeReport(appId, id, sendStart(row), row.finishedAt());
                log.info("Notification {} cancelled earlier: its last in-flight recipient is recorded, its counts are final", id);
            }
            return;
        }
        if (row == null || !PROCESSING.equals(row.status()) || row.recipientCount() == null) return;
        List<NotificationRepository.Count> counts = finalCounts(notifications, appId, id);
        if (counts == null) return;
        long accepted = counts.stream().filter(c -> c.status().equals("accepted")).mapToLong(NotificationRepository.Count::count).sum();
        long failed = counts.stream().filter(c -> FAILED_STATES.contains(c.status())).mapToLong(NotificationRepository.Count::count).sum();
        String status = accepted == 0 && failed > 0 ? FAILED : COMPLETED;
        Instant now = clock.instant();
        notifications.finish(appId, id, status, now, summary(counts));
        notifications.storeReport(appId, id, sendStart(row), now);
        lifecycle.record(appId, status.equals(FAILED) ? Kind.NOTIFICATION_FAILED : Kind.NOTIFICATION_COMPLETED, id,
                Map.of("notification_id", id, "recipients", row.recipientCount(), "accepted", accepted, "failed", failed), now);
        log.info("Notification {} {}: {} recipient(s), {} accepted, {} failed", id, status, row.recipientCount(), accepted, failed);
    }

    /** The reason a notification failed because its fan-out was dead-lettered (its {@code notification.failed} fact). */
    static final String FANOUT_FAILED = "fanout_failed";

    /**
     * Fails a queued or processing notification whose fan-out task was dead-lettered (its attempts ran
     * out, or it failed permanently), once nothing it materialized is in flight: the audience was not
     * reached in full. Its recipient count becomes what was materialized, its counts are stored as
     * final, and its {@code notification.failed} fact carries {@code reason} {@value #FANOUT_FAILED}.
     * Does nothing when it is terminal already, its fan-out finished, or work is left (the caller
     * checked the dead letter). Called by the reconciler ({@link NotificationReconciler}).
     */
    @Transactional
    public void failFanOut(UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.lock(appId, id).orElse(null);
        if (row == null || !(QUEUED.equals(row.status()) || PROCESSING.equals(row.status())) || row.recipientCount() != null) return;
        if (notifications.hasWorkLeft(id)) return;
        Instant now = clock.instant();
        int recipients = notifications.setRecipientCount(appId, id, now).orElse(0);
        List<NotificationRepository.Count> counts = notifications.counts(appId, List.of(id));
        long accepted = counts.stream().filter(c -> c.status().equals("accepted")).mapToLong(NotificationRepository.Count::count).sum();
        long failed = counts.stream().filter(c -> FAILED_STATES.contains(c.status())).mapToLong(NotificationRepository.Count::count).sum();
        notifications.finish(appId, id, FAILED, now, summary(counts));
        notifications.storeReport(appId, id, sendStart(row), now);
        lifecycle.record(appId, Kind.NOTIFICATION_FAILED, id, Map.of("notification_id", id, "recipients", recipients,
                "accepted", accepted, "failed", failed, "reason", FANOUT_FAILED), now);
        log.warn("Notification {} failed: its fan-out was dead-lettered after {} of its recipient(s) were materialized"
                + " ({} accepted, {} failed)", id, recipients, accepted, failed);
    }

    /** When the send of {@code row} began, as the report page's timeline counts it. */
    private static Instant sendStart(NotificationRepository.Row row) {
        return row.processingAt() != null ? row.processingAt() : row.createdAt();
    }

    /** The notification's counts when none of its recipients is pending or in flight any more, else null. */
    private static List<NotificationRepository.Count> finalCounts(NotificationRepository notifications, UUID appId, UUID id) {
        // a look through the work index first: counting every recipient of a large send while most are
        // still pending or in flight (the fan-out's last page calls this) cost PostgreSQL a read of each
        // (bench/README.md, "Figures behind design comments")
        if (notifications.hasWorkLeft(id)) return null;
        List<NotificationRepository.Count> counts = notifications.counts(appId, List.of(id));
        return counts.stream().anyMatch(c -> c.status().equals("pending") || c.status().equals("sending")) ? null : counts;
    }

    @Override
    public boolean exists(UUID appId, UUID notificationId) {
        return notifications.exists(appId, notificationId);
    }

    // --- reads ---------------------------------------------------------------------------------

    NotificationView get(UUID appId, UUID id) {
        NotificationRepository.Row row = notifications.find(appId, id).orElseThrow(() -> new NotFound("Notification"));
        List<NotificationRepository.Count> counts = row.summary() != null ? fromSummary(id, row.summary())
                : notifications.counts(appId, List.of(id));
        return view(row, counts);
    }

    public Page<NotificationView> list(UUID appId, PageRequest page) {
        List<NotificationRepository.Row> rows = notifications.list(appId, page);
        List<UUID> live = rows.stream().filter(r -> r.summary() == null).map(NotificationRepository.Row::id).toList();
        Map<UUID, List<NotificationRepository.Count>> counts = new HashMap<>();
        for (NotificationRepository.Count c : notifications.counts(appId, live)) {
            counts.computeIfAbsent(c.notificationId(), k -> new ArrayList<>()).add(c);
        }
        List<NotificationView> views = rows.stream()
                .map(r -> view(r, r.summary() != null ? fromSummary(r.id(), r.summary()) : counts.getOrDefault(r.id(), List.of())))
                .toList();
        return Page.of(views, page);
    }

    /**
     * A page of the notification's recipients: by {@code cursor} (null: none) from the position it
     * names, else by {@code page} up to {@link RecipientPage#MAX_OFFSET_ROWS} rows deep. Either way the
     * page says where the next one starts ({@code next_cursor}).
     *
     * @throws InvalidInput a cursor this service did not make, a cursor with a page beyond the first,
     *         or a page deeper than offset paging reads
     */
    RecipientPage recipients(UUID appId, UUID id, PageRequest page, String cursor) {
        UUID after = null;
        if (cursor != null) {
            after = RecipientPage.after(cursor);
            if (after == null) throw InvalidInput.of("cursor", "must be a next_cursor of this list, unchanged");
            if (page.page() > 1) throw InvalidInput.of("page", "give either page or cursor, not both");
        } else if ((long) page.page() * page.limit() > RecipientPage.MAX_OFFSET_ROWS) {
            throw InvalidInput.of("page", "page × limit must be at most " + RecipientPage.MAX_OFFSET_ROWS
                    + "; read deeper pages with cursor (the pagination's next_cursor)");
        }
        if (!notifications.exists(appId, id)) throw new NotFound("Notification");
        List<NotificationRepository.Recipient> rows = after != null
                ? notifications.recipientsAfter(appId, id, after, page.fetchSize())
                : notifications.recipients(appId, id, page);
        boolean more = rows.size() > page.limit();
        if (more) rows = rows.subList(0, page.limit());
        List<NotificationView.RecipientView> data = rows.stream()
                .map(r -> new NotificationView.RecipientView(r.deviceId(), r.platform(), r.externalUserId(), r.status(),
                        r.attempts(), r.lastError(), r.updatedAt(), r.dueAt(), r.expiresAt()))
                .toList();
        String next = more ? RecipientPage.cursor(rows.getLast().deviceId()) : null;
        return new RecipientPage(data, new RecipientPage.Pagination(page.page(), page.limit(), more, next));
    }

    Page<EventReads.EventView> events(UUID appId, UUID id, PageRequest page) {
        if (!notifications.exists(appId, id)) throw new NotFound("Notification");
        return events.forNotification(appId, id, page);
    }

    private static JsonNode summary(List<NotificationRepository.Count> counts) {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        for (NotificationRepository.Count c : counts) {
            out.addObject().put("platform", c.platform()).put("status", c.status()).put("count", c.count());
        }
        return out;
    }

    private static List<NotificationRepository.Count> fromSummary(UUID id, JsonNode summary) {
        List<NotificationRepository.Count> counts = new ArrayList<>();
        for (JsonNode c : summary) {
            counts.add(new NotificationRepository.Count(id, c.path("platform").stringValue(), c.path("status").stringValue(),
                    c.path("count").longValue()));
        }
        return counts;
    }

    private static NotificationView view(NotificationRepository.Row r, List<NotificationRepository.Count> counts) {
        Map<String, Long> byStatus = new LinkedHashMap<>();
        RECIPIENT_STATES.forEach(s -> byStatus.put(s, 0L));
        Map<String, long[]> byPlatform = new LinkedHashMap<>();
        for (String p : List.of("ios", "android", "web")) byPlatform.put(p, new long[3]);
        for (NotificationRepository.Count c : counts) {
            byStatus.merge(c.status(), c.count(), Long::sum);
            long[] p = byPlatform.computeIfAbsent(c.platform(), k -> new long[3]);
            p[0] += c.count();
            if (c.status().equals("accepted")) p[1] += c.count();
            if (FAILED_STATES.contains(c.status())) p[2] += c.count();
        }
        Map<String, NotificationView.PlatformCounts> platforms = new LinkedHashMap<>();
        byPlatform.forEach((k, v) -> platforms.put(k, new NotificationView.PlatformCounts(v[0], v[1], v[2])));
        long failed = FAILED_STATES.stream().mapToLong(s -> byStatus.getOrDefault(s, 0L)).sum();
        JsonNode audience = r.audience();
        JsonNode target = audience.path("target");
        JsonNode segment = audience.get("segment");
        return new NotificationView(r.id(), r.name(), r.status(), r.priority(), r.interruptionLevel(), target,
                segment == null ? null : refs(JsonNodeFactory.instance.arrayNode().add(segment)).getFirst(),
                refs(audience.path("included")), refs(audience.path("excluded")),
                r.templateId() == null ? null : new NotificationView.TemplateRef(r.templateId(), r.templateVersion()),
                r.content(), r.ttl(), r.localDeliveryTime(), r.frequencyCapOverride(), r.scheduledAt(), r.createdAt(),
                r.queuedAt(), r.processingAt(), r.finishedAt(), r.updatedAt(), r.recipientCount(),
                byStatus.get("accepted"), failed, byStatus, platforms, r.terminal() ? null : r.lastDueAt());
    }

    private static List<NotificationView.SegmentRef> refs(JsonNode list) {
        List<NotificationView.SegmentRef> refs = new ArrayList<>();
        for (JsonNode s : list) {
            refs.add(new NotificationView.SegmentRef(UUID.fromString(s.path("segment_id").stringValue()), s.path("version").intValue()));
        }
        return refs;
    }
}
