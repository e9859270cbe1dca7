package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.SchedulerClient;
import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.apps.NotificationDefaults;
import dev.pushservice.audit.AuditLog;
import dev.pushservice.events.NotificationReferences;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.lifecycle.LifecycleEventRepository.Kind;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Violation;
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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import dev.pushservice.platform.jobs.JobRunner;
import org.slf4j.Logger;
import org.springframework.beans.factory.ObjectProvider;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Notifications' creation: validation against the app's data, template resolution, the app's
 * defaults, snapshots, idempotency; the request path ({@link #create}) and the service's own
 * ({@link #createForUsers}) share the steps that store one ({@link #store}): its row, its lifecycle
 * facts ({@link LifecycleEventRepository}) and its fan-out, in one transaction. Drafts are queued
 * when due ({@link #queueDueDrafts}). What follows creation is {@link NotificationStates}'s (cancel,
 * finishing), what reads show is {@link NotificationViews}'s. Thread-safe.
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

    private final NotificationRepository notifications;
    private final NotificationReadRepository reads;
    private final SegmentService segments;
    private final TemplateService templates;
    private final LifecycleEventRepository lifecycle;
    private final SchedulerClient scheduler;
    private final AuditLog audit;
    private final Clock clock;
    private final ObjectProvider<JobRunner> jobs;
    private final AppSettingsService settings;
    private final ObjectProvider<NotificationFanOut> fanOut;

    NotificationService(NotificationRepository notifications, NotificationReadRepository reads, SegmentService segments,
                        TemplateService templates, LifecycleEventRepository lifecycle, SchedulerClient scheduler, Clock clock,
                        ObjectProvider<JobRunner> jobs, AuditLog audit, AppSettingsService settings,
                        ObjectProvider<NotificationFanOut> fanOut) {
        this.notifications = notifications;
        this.reads = reads;
        this.segments = segments;
        this.templates = templates;
        this.lifecycle = lifecycle;
        this.scheduler = scheduler;
        this.clock = clock;
        this.jobs = jobs;
        this.audit = audit;
        this.settings = settings;
        this.fanOut = fanOut;
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
        if (!store(row, status, materializeNow)) {
            // a concurrent request with this key committed first: it is the original
            return replay(notifications.findByKey(appId, idempotencyKey)
                    .orElseThrow(() -> new IllegalStateException("idempotency key conflict without a row")), request);
        }
        List<String> fields = new ArrayList<>(List.of("audience", "content", "priority", "status"));
        if (template != null) fields.add("template_id");
        if (request.scheduledAt() != null) fields.add("scheduled_at");
        audit.record(appId, "notification.create", "notification", id, fields);
        log.info("Notification {} created ({}, priority {}, target {})", id, status, priority, target.type());
        return new NotificationView.Created(id, status, level, request.scheduledAt(), now, false);
    }

    /**
     * The creation steps every notification takes, in the caller's transaction: its row, its
     * lifecycle facts ({@link #creationFacts}, created in {@code status}), then its fan-out:
     * materialized here when {@code materializeNow}, else its task enqueued when it is queued (a
     * draft gets its task when it is due: {@link #queueDueDrafts}). False, with nothing written,
     * when the app already has a notification with the row's idempotency key.
     */
    private boolean store(NotificationRepository.NewNotification row, String status, boolean materializeNow) {
        if (!notifications.insert(row)) return false;
        lifecycle.recordAll(row.appId(), row.id(), row.createdAt(), creationFacts(row.id(), status, materializeNow));
        if (materializeNow) {
            log.info("Notification {} processing: materializing recipients at creation", row.id());
            // every page joins this transaction: the recipients commit with the notification (and its caller's writes)
            fanOut.getObject().materializeNow(row.appId(), row.id());
        } else if (QUEUED.equals(status)) {
            enqueueFanOut(row.appId(), row.id(), row.priority());
        }
        return true;
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
        ObjectNode snapshot = JsonNodeFactory.instance.objectNode();
        for (String field : CONTENT_FIELDS) {
            JsonNode value = content.get(field);
            if (value != null && !value.isNull()) snapshot.set(field, value);
        }
        ObjectNode audience = JsonNodeFactory.instance.objectNode();
        audience.set("target", target);
        audience.set("included", JsonNodeFactory.instance.arrayNode());
        audience.set("excluded", JsonNodeFactory.instance.arrayNode());
        ArrayNode users = audience.putArray(NotificationFanOut.AUDIENCE_USERS);
        userIds.forEach(u -> users.add(u.toString()));
        Prepared prepared = withDefaults(appId, audience, null, snapshot, interruptionLevel, priority, null, null);
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
                prepared.priority(), prepared.interruptionLevel(), snapshot, null, null, audience, prepared.ttl(), null,
                false, null, now, now, now, now);
        if (!store(row, QUEUED, true)) throw new IllegalStateException("notification id collision");
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
                if (!reads.deviceExists(appId, target.deviceId())) {
                    problems.add(new Violation("target.device_id", "no device with this id exists in this app"));
                }
            }
            case "user" -> {
                if (!reads.userExists(appId, target.externalUserId())) {
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

        return withDefaults(appId, audience, template, content(request, base, title, body), request.interruptionLevel(),
                request.priority(), request.ttl(), request.sound());
    }

    /**
     * What is given over the template's over the app's notification defaults over the built-in
     * ones, for every field they fill: {@code interruption_level} (the template's too),
     * {@code priority}, {@code ttl}, and {@code sound} (put into {@code content}, unless it has one and
     * none is given).
     */
    private Prepared withDefaults(UUID appId, ObjectNode audience, TemplateSnapshot template, ObjectNode content,
                                  String interruptionLevel, String priority, Integer ttl, String sound) {
        NotificationDefaults defaults = settings.notificationDefaults(appId);
        TemplateContent base = template == null ? null : template.content();
        String level = first(interruptionLevel, base == null ? null : base.interruptionLevel(),
                defaults.interruptionLevel(), "active");
        if (sound != null || !content.has("sound")) putText(content, "sound", first(sound, defaults.sound()));
        return new Prepared(audience, template, level, first(priority, defaults.priority(), "normal"),
                first(ttl, defaults.ttl()), content);
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

    @Override
    public boolean exists(UUID appId, UUID notificationId) {
        return notifications.exists(appId, notificationId);
    }
}
