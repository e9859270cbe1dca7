package dev.pushservice.notifications;

import dev.pushservice.delivery.Blueprint;
import dev.pushservice.delivery.DeliveryEngine;
import dev.pushservice.delivery.DeliveryReasons;
import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.delivery.Handover;
import dev.pushservice.platform.rules.InterruptionLevel;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.delivery.PushMessage;
import dev.pushservice.devices.DeviceInvalidation;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.platform.db.DeliveryDatabase;
import dev.pushservice.platform.jobs.DeadLetterRepository;
import dev.pushservice.platform.rules.Locales;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.templates.CompiledContent;
import dev.pushservice.templates.Renderer;
import dev.pushservice.templates.TemplateContent;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Notifications' side of delivery: the {@link DeliveryStore} over {@code notification_recipients}
 * (on the delivery connection pool) and the {@link DeliveryHandoff} that wakes the
 * {@link DeliveryEngine}'s lane after the fan-out commits recipients.
 *
 * <p>SQL lives in {@link DeliveryRecipientRepository}. Claiming: due recipients ({@code pending}, or {@code sending} whose lease ran out) of the lane's
 * processing notifications, per platform, {@code FOR UPDATE SKIP LOCKED}, set to {@code sending}
 * with the lease end in {@code next_attempt_at} and the attempt counted, in one statement that also
 * reads the device token and the frozen render values. Recording: one {@code UPDATE … FROM
 * jsonb_to_recordset} per chunk for every outcome, of rows still claimed for that attempt, and one
 * insert for handed recipients that have no row yet: recording a batch again writes nothing twice. Each
 * of those statements also keeps the attempts that did not end their recipient (retries, deferrals) in
 * {@code delivery_attempts}, from the rows it wrote: the recipient timeline's history. A
 * retry of a notification cancelled meanwhile becomes {@code cancelled}. After the commit, each step on
 * its own and never failing the recording: devices with dead tokens are invalidated through
 * {@link DeviceInvalidation} (only if registered before the provider's invalidation time, or
 * before the attempt's claim; what fails is tried again), and a notification with nothing left to send
 * is finished through {@link NotificationStates#finishIfDone} (exact counts, lifecycle fact, log line;
 * what fails is left to {@link NotificationReconciler}). Everything a lane's thread calls here (claim,
 * blueprint, record, invalidation, finishing) runs on the delivery pool, so an overloaded API pool
 * never stalls delivery.
 *
 * <p>Frequency caps are a separate step of the claim and record transactions
 * ({@link FrequencyCapping}): after the claim statement, recipients over their user's cap become
 * {@code skipped_frequency_cap} and are not returned (so a claim may return fewer than it took; the
 * lane is woken to claim again when the chunk was full); after the record statement, sends that did
 * not end accepted give their counted slot back.
 *
 * <p>A crash between the recording commit and the invalidation leaves the device valid: its next
 * send is rejected again and invalidates it then. A crash before the finishing leaves it to the
 * reconciler. Thread-safe.
 */
@Component
class RecipientDelivery implements DeliveryStore, DeliveryHandoff {

    private static final Logger log = LoggerFactory.getLogger(RecipientDelivery.class);
    static final String DEAD_LETTER_TASK = "delivery";

    private final DeliveryRecipientRepository recipients;
    private final DeliveryEngine engine;
    private final NotificationStates service;
    private final DeviceInvalidation devices;
    private final FrequencyCapping caps;
    private final DeliveryDatabase db;
    /** Notifications read and finished on the delivery pool: what a lane thread does never waits for the API pool. */
    private final NotificationRepository notifications;
    private final NotificationReadRepository reads;
    private final LifecycleEventRepository lifecycle;

    RecipientDelivery(DeliveryRecipientRepository recipients, DeliveryEngine engine, DeliveryDatabase db, JsonMapper json,
                      LifecycleEventRepository lifecycle, NotificationStates service, DeviceInvalidation devices,
                      FrequencyCapping caps) {
        this.caps = caps;
        this.recipients = recipients;
        this.engine = engine;
        this.db = db;
        this.notifications = new NotificationRepository(db.jdbc(), json);
        this.reads = new NotificationReadRepository(db.jdbc(), json);
        this.lifecycle = lifecycle.on(db.jdbc());
        this.service = service;
        this.devices = devices;
    }

    // ---- hand-over from the fan-out --------------------------------------------------------------

    @Override
    public void recipientsAdded(UUID appId, UUID notificationId, String priority, int count) {
        engine.signalAfterCommit(lane(priority));
    }

    @Override
    public void materialized(UUID appId, UUID notificationId, String priority, long recipients, boolean inOneTransaction) {
        if (recipients == 0) return;
        // in the fan-out's transaction, under its lock on the notification: recipients delivered before
        // the count was set are seen here, those recorded after it see the count (see finishAll)
        service.finishIfDone(appId, notificationId);
        // ...except those made terminal after the check above and checked themselves before this commit
        // (they saw no count yet): the check once more after the commit closes that gap. It was hit under
        // load by fast outcomes (frequency-cap skips, quick acceptances): the notification stayed processing.
        // Recipients inserted by this very transaction cannot be recorded before it commits: no gap, and
        // no query between a creation's commit and its 202.
        if (inOneTransaction) return;
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            finishAll(Map.of(notificationId, appId), false);
            return;
        }
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCommit() {
                finishAll(Map.of(notificationId, appId), false);
            }
        });
    }

    /**
     * Room in the lane of this instance, unless a frequency cap applies to the app and lane: capped recipients
     * are admitted by the claim's transaction ({@link FrequencyCapping#admit}), so they all go
     * through the claim.
     */
    @Override
    public Handover handover(UUID appId, String priority, int max, int[] seen, Duration wait) {
        Priority lane = lane(priority);
        if (caps.applies(appId, lane)) return null;
        return engine.reserve(lane, max, seen, wait);
    }

    @Override
    public void cancelled(UUID appId, UUID notificationId) {
        engine.cancelled(notificationId);
    }

    static Priority lane(String priority) {
        return Priority.valueOf(priority.toUpperCase(Locale.ROOT));
    }

    // ---- the store -------------------------------------------------------------------------------

    @Override
    public List<Claimed> claim(Priority lane, Platform platform, int limit, Instant now, Duration lease, DeliveryStore.Apps apps) {
        List<Claimed> claimed = new ArrayList<>();
        FrequencyCapping.Admission admission = recipients.inTransaction(() -> {
            reclaimHandovers(lane, now);
            claimed.addAll(recipients.claim(lane, platform, limit, now, now.plus(lease), apps));
            // ---- step 2: frequency caps over what was claimed (FrequencyCapping), same transaction ----
            return caps.admit(lane, claimed, now);
        });
        if (!admission.skipped().isEmpty()) {
            engine.skipped(lane, platform, FrequencyCapping.METRIC_REASON, admission.skippedRecipients());
            // skipped recipients are terminal now: their notification may have nothing left to send
            finishAll(admission.skipped(), true);
            // the lane claims again at once only when a chunk comes back full: make it look again
            if (claimed.size() == limit) engine.signal(lane);
        }
        return admission.admitted();
    }

    @Override
    public List<Claimed> leaseHandovers(Priority lane, Platform platform, int room, Instant now, Duration lease,
                                        DeliveryStore.Apps apps) {
        // unsendable recipients come back failed (not handed), as from a claim: the lane counts them and
        // their recording looks at whether their notification is finished
        return recipients.inTransaction(() -> recipients.leaseHandovers(lane, platform, room, now, now.plus(lease), apps));
    }

    /** Handovers whose lease ended {@link #reclaimHandovers} takes per statement. */
    static final int RECLAIMED_HANDOVERS = 20;
    /** How often per lane a claim looks for handovers whose lease ended: leases last minutes, a look is a statement. */
    static final Duration RECLAIM_EVERY = Duration.ofSeconds(1);
    private final Map<Priority, Instant> lastReclaim = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * In the claim's transaction, at most once per {@link #RECLAIM_EVERY} and lane: the recipients of
     * handovers whose lease ended unrecorded get {@code pending} rows, so this claim takes them.
     */
    private void reclaimHandovers(Priority lane, Instant now) {
        Instant last = lastReclaim.get(lane);
        if (last != null && now.isBefore(last.plus(RECLAIM_EVERY)) && !now.isBefore(last)) return;
        lastReclaim.put(lane, now);
        int reclaimed = recipients.reclaimHandovers(lane, now, RECLAIMED_HANDOVERS);
        if (reclaimed > 0) {
            log.info("{} handed recipient(s) left unrecorded past their lease given back to the claim", reclaimed);
        }
    }

    @Override
    public Optional<Blueprint> blueprint(UUID appId, UUID notificationId) {
        return notifications.find(appId, notificationId).map(RecipientDelivery::blueprint);
    }

    /** {@code recipient} with {@code attempts} sends counted. */
    private static Claimed withAttempts(Claimed r, int attempts) {
        return new Claimed(r.notificationId(), r.appId(), r.deviceId(), r.platform(), r.token(), Math.max(0, attempts),
                r.values(), r.unsendable(), r.expiresAt(), r.locales(), r.handed());
    }

    static Blueprint blueprint(NotificationRepository.Row row) {
        Instant due = row.queuedAt() != null ? row.queuedAt() : row.createdAt();
        return blueprint(row.id(), row.appId(), row.priority(), row.interruptionLevel(), row.content(), row.ttl(), due);
    }

    /**
     * The blueprint of a notification with the content snapshot {@code c} (as stored), due at
     * {@code due}: what delivery sends, and what a preview shows before anything is stored.
     */
    static Blueprint blueprint(UUID id, UUID appId, String priority, String interruptionLevel, JsonNode c, Integer ttl,
                               Instant due) {
        CompiledContent compiled = compile(id, text(c, "title"), text(c, "body"), text(c, "click_url"), object(c, "data"));
        List<PushMessage.Action> actions = new ArrayList<>();
        JsonNode a = c.get("actions");
        if (a instanceof ArrayNode array) {
            for (JsonNode action : array) {
                actions.add(new PushMessage.Action(text(action, "id"), text(action, "text"), text(action, "icon")));
            }
        }
        // without a TTL of its own a notification is retried through an outage for DEFAULT_TTL (the
        // providers keep it as long as they do by default); its messages still carry no TTL
        Instant expiresAt = due.plusSeconds(ttl == null ? Blueprint.DEFAULT_TTL.toSeconds() : ttl);
        JsonNode badge = c.get("badge");
        JsonNode overrides = c.get("platform_overrides");
        return new Blueprint(id, appId, lane(priority),
                InterruptionLevel.valueOf(interruptionLevel.toUpperCase(Locale.ROOT)), compiled,
                c.get("template_data"), text(c, "image_url"), ttl, expiresAt, text(c, "collapse_id"),
                text(c, "sound"), badge != null && badge.isNumber() ? badge.intValue() : null, text(c, "category"),
                actions, c.path("content_available").asBoolean(false),
                overrides instanceof ObjectNode o ? o : null, localizations(id, c));
    }

    private static CompiledContent compile(UUID id, String title, String body, String clickUrl, JsonNode data) {
        List<String> problems = new ArrayList<>();
        CompiledContent compiled = CompiledContent.compile(new TemplateContent(title, body, clickUrl, data, null),
                (field, problem) -> problems.add(field + ": " + problem));
        if (compiled == null) {
            // validated at creation, so this is a bug; every recipient fails with render_failed
            throw new IllegalStateException("stored content of notification " + id + " does not compile: " + problems);
        }
        return compiled;
    }

    /**
     * Each localization made complete: a field it leaves out comes from the localization of a
     * shorter form of its locale ({@code pt-BR} from {@code pt}), else from the default content.
     * Data is not localized: every variant shares the default's.
     */
    private static Map<String, Blueprint.Localized> localizations(UUID id, JsonNode c) {
        JsonNode all = c.get("localizations");
        if (all == null || !all.isObject() || all.isEmpty()) return Map.of();
        Map<String, JsonNode> byLocale = new LinkedHashMap<>();
        Map<String, String> spelled = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : all.properties()) {
            byLocale.put(Locales.normalize(e.getKey()), e.getValue());
            spelled.put(Locales.normalize(e.getKey()), e.getKey());
        }
        Map<String, Blueprint.Localized> out = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : byLocale.entrySet()) {
            List<JsonNode> chain = new ArrayList<>();
            chain.add(e.getValue());
            for (String shorter : Locales.shorterForms(e.getKey())) {
                if (byLocale.containsKey(shorter)) chain.add(byLocale.get(shorter));
            }
            chain.add(c);
            CompiledContent compiled = compile(id, first(chain, "title"), first(chain, "body"), first(chain, "click_url"),
                    object(c, "data"));
            out.put(e.getKey(), new Blueprint.Localized(spelled.get(e.getKey()), compiled, first(chain, "image_url")));
        }
        return out;
    }

    private static String first(List<JsonNode> chain, String field) {
        for (JsonNode node : chain) {
            String value = text(node, field);
            if (value != null) return value;
        }
        return null;
    }

    private static String text(JsonNode node, String field) {
        JsonNode v = node == null ? null : node.get(field);
        return v == null || v.isNull() ? null : v.isString() ? v.stringValue() : v.toString();
    }

    private static JsonNode object(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v != null && v.isObject() ? v : null;
    }

    @Override
    public void record(List<Outcome> outcomes, Instant now) {
        if (outcomes.isEmpty()) return;
        ArrayNode rows = JsonNodeFactory.instance.arrayNode();
        DeliveryRecipientRepository.HandedRows handedRows = new DeliveryRecipientRepository.HandedRows(outcomes.size());
        // handed recipients accepted at their first attempt: one batch per handover and platform (V58)
        Map<Long, Map<Platform, DeliveryRecipientRepository.AcceptedBatch>> acceptedBatches = new LinkedHashMap<>();
        Set<String> unconfigured = new LinkedHashSet<>();
        ArrayNode unconfiguredRows = JsonNodeFactory.instance.arrayNode();
        Map<DeliveryRecipientRepository.Written, DeadLetterRepository.Entry> deadLetters = new LinkedHashMap<>();
        Map<DeliveryRecipientRepository.Written, Invalid> invalid = new LinkedHashMap<>();
        Set<String> refused = new LinkedHashSet<>();
        ArrayNode refusedRows = JsonNodeFactory.instance.arrayNode();
        Map<UUID, UUID> touched = new LinkedHashMap<>();
        ArrayNode unaccepted = JsonNodeFactory.instance.arrayNode();
        for (Outcome o : outcomes) {
            Claimed r = o.recipient();
            touched.put(r.notificationId(), r.appId());
            DeliveryRecipientRepository.Written key = new DeliveryRecipientRepository.Written(r.notificationId(), r.deviceId());
            String status;
            String error = null;
            Instant retryAt = null;
            String providerId = null;
            boolean uncounted = false;
            Integer httpStatus = null;
            // the attempt's entry in the recipient's history (delivery_attempts), for one that does not end it
            String attempt = null;
            switch (o) {
                case Accepted a -> {
                    status = States.ACCEPTED;
                    providerId = a.providerId();
                }
                case Rejected x -> {
                    status = x.tokenInvalid() ? States.INVALID_TOKEN : States.FAILED;
                    error = x.reason();
                    if (x.invalidatesDevice()) {
                        // dead from the provider's own time when it says (APNs), else from this attempt's
                        // claim, which came before its send (DeviceService#invalidate)
                        Instant since = x.invalidatedAt() != null ? x.invalidatedAt()
                                : r.claimedAt() != null ? r.claimedAt() : now;
                        invalid.put(key, new Invalid(r.appId(), r.deviceId(), x.reason(), since));
                    }
                    if (DeliveryReasons.CREDENTIALS_INVALID.equals(x.reason())
                            && refused.add(r.appId() + "/" + r.platform().value())) {
                        refusedRows.addObject().put("a", r.appId().toString()).put("p", r.platform().value());
                    }
                    if (DeliveryReasons.CREDENTIALS_MISSING.equals(x.reason())
                            && unconfigured.add(r.notificationId() + "/" + r.platform().value())) {
                        unconfiguredRows.addObject().put("n", r.notificationId().toString()).put("p", r.platform().value());
                    }
                }
                case Retry x -> {
                    status = States.PENDING;
                    error = x.reason();
                    retryAt = x.at();
                    httpStatus = x.httpStatus();
                    attempt = "retry";
                }
                case Deferred x -> {
                    // never sent (its provider's circuit is open): the attempt its claim counted is given back
                    status = States.PENDING;
                    error = x.reason();
                    retryAt = x.at();
                    uncounted = true;
                    // waiting out the provider's outage or rate limit is history; the lane's own gate giving back
                    // a send its origin has no room for (every poll interval of a large Web Push send) is not
                    if (!DeliveryReasons.ORIGIN_BUSY.equals(x.reason())) attempt = "deferred";
                }
                case GaveUp x -> {
                    status = x.expired() ? States.EXPIRED : States.FAILED;
                    error = x.reason();
                    if (!x.expired()) {
                        deadLetters.put(key, new DeadLetterRepository.Entry("notification " + r.notificationId() + " device " + r.deviceId(),
                                r.attempts(), x.why() + ": " + x.reason()));
                    }
                }
                case Cancelled x -> {
                    status = States.CANCELLED;
                    error = DeliveryReasons.CANCELLED;
                }
            }
            if (r.handed() != null && o instanceof Accepted && r.attempts() == 1) {
                acceptedBatches.computeIfAbsent(r.handed().handover(), h -> new EnumMap<>(Platform.class))
                        .computeIfAbsent(r.platform(), p -> new DeliveryRecipientRepository.AcceptedBatch(r.handed().handover(), p))
                        .add(r.deviceId(), r.handed().userId(), r.values() == null ? null : r.values().externalUserId(), providerId);
                continue;
            }
            if (r.handed() != null) {
                // handed recipients are never capped (see handover): no slot to give back
                handedRows.add(uncounted ? withAttempts(r, r.attempts() - 1) : r, status, error, retryAt, providerId,
                        attempt, httpStatus);
                continue;
            }
            if (!(o instanceof Accepted)) unaccepted.addObject().put("n", r.notificationId().toString()).put("d", r.deviceId().toString());
            ObjectNode row = rows.addObject().put("n", r.notificationId().toString()).put("d", r.deviceId().toString())
                    .put("k", r.attempts()).put("s", status).put("e", error).put("t", retryAt == null ? null : retryAt.toString())
                    .put("p", providerId);
            if (uncounted) row.put("u", 1);
            if (attempt != null) row.put("o", attempt);
            if (httpStatus != null) row.put("h", httpStatus);
        }
        Recorded recorded = recipients.inTransaction(() -> {
            // the rows written that did not end accepted: the only ones with effects below
            Set<DeliveryRecipientRepository.Written> written = new HashSet<>();
            if (!rows.isEmpty()) written.addAll(recipients.record(rows.toString(), now));
            // each locks its handover first; in handover id order, as recordHanded locks its own
            new java.util.TreeMap<>(acceptedBatches).values()
                    .forEach(byPlatform -> byPlatform.values().forEach(batch -> recipients.recordAccepted(batch, now)));
            if (!handedRows.isEmpty()) written.addAll(recipients.recordHanded(handedRows, now));
            // only outcomes written now have effects: the same batch recorded again (a commit whose answer
            // was lost) writes no row, so it dead-letters and invalidates nothing twice
            List<DeadLetterRepository.Entry> letters = new ArrayList<>();
            deadLetters.forEach((key, entry) -> {
                if (written.contains(key)) letters.add(entry);
            });
            recipients.deadLetters(letters);
            // the app has no credentials for the platform: fail the rest at once instead of sending each
            int failed = unconfiguredRows.isEmpty() ? 0 : recipients.failUnconfigured(unconfiguredRows.toString(), now);
            // ---- frequency caps: sends that ended other than accepted give their slot back (by status: repeatable) ----
            if (!unaccepted.isEmpty()) caps.released(unaccepted.toString());
            if (failed > 0) caps.releasedAll(unconfiguredNotifications(unconfiguredRows));
            // the provider refused the app's credentials: the platform's pending recipients of every
            // notification of the app fail at once, none is sent to be refused again
            if (!refusedRows.isEmpty()) {
                Map<UUID, UUID> ended = recipients.failCredentialsInvalid(refusedRows.toString(), now);
                if (!ended.isEmpty()) {
                    caps.releasedAll(ended.keySet());
                    touched.putAll(ended);
                    log.info("Pending recipients of {} notification(s) failed at once: their provider refused the app's credentials",
                            ended.size());
                }
            }
            List<Invalid> dead = new ArrayList<>();
            invalid.forEach((key, device) -> {
                if (written.contains(key)) dead.add(device);
            });
            return new Recorded(failed, dead);
        });
        if (recorded.failedAtOnce() > 0) {
            log.info("{} pending recipient(s) failed at once: no credentials for their platform", recorded.failedAtOnce());
        }
        // after the commit, each step on its own: a failure here never fails the recording (which the lane would
        // then record again); the invalidations are tried again later, the finishing falls to the reconciler
        invalidate(recorded.invalid(), now);
        finishAll(touched, true);
    }

    /** A device whose token its provider declared dead, {@code since} then. */
    private record Invalid(UUID appId, UUID deviceId, String reason, Instant since) {
    }

    private record Recorded(int failedAtOnce, List<Invalid> invalid) {
    }

    /** Invalidations that failed after their recording committed, tried again at the next recording and reconciliation. */
    private final ConcurrentLinkedQueue<Invalid> invalidationsToRetry = new ConcurrentLinkedQueue<>();
    private final AtomicInteger invalidationsWaiting = new AtomicInteger();
    /**
     * At most this many failed invalidations wait in memory; beyond it (the database has been failing for
     * long) one is dropped: its device's next send is refused again and invalidates it then.
     */
    static final int INVALIDATIONS_KEPT = 10_000;

    /**
     * Invalidates {@code devices} (with those that failed before) through the devices feature, one
     * statement per app and reason. Never throws: what fails waits for the next try. A crash loses the
     * waiting ones: their devices' next send is refused again and invalidates them then.
     */
    private void invalidate(List<Invalid> devices, Instant now) {
        List<Invalid> all = new ArrayList<>(devices);
        Invalid retry;
        while ((retry = invalidationsToRetry.poll()) != null) {
            invalidationsWaiting.decrementAndGet();
            all.add(retry);
        }
        if (all.isEmpty()) return;
        Map<UUID, Map<String, Map<UUID, Instant>>> byApp = new LinkedHashMap<>();
        for (Invalid d : all) {
            // a device refused twice: the later time covers both
            byApp.computeIfAbsent(d.appId(), k -> new LinkedHashMap<>()).computeIfAbsent(d.reason(), k -> new LinkedHashMap<>())
                    .merge(d.deviceId(), d.since(), (a, b) -> a.isAfter(b) ? a : b);
        }
        byApp.forEach((app, byReason) -> byReason.forEach((reason, since) -> {
            try {
                this.devices.invalidate(app, since, reason, now);
            } catch (RuntimeException e) {
                log.warn("{} device(s) with dead tokens could not be invalidated, trying again later: {}", since.size(),
                        e.toString());
                since.forEach((device, at) -> {
                    if (invalidationsWaiting.incrementAndGet() > INVALIDATIONS_KEPT) {
                        invalidationsWaiting.decrementAndGet();
                        return;
                    }
                    invalidationsToRetry.add(new Invalid(app, device, reason, at));
                });
            }
        }));
    }

    /** Tries again the invalidations that failed (the reconciler calls it when no recording does). */
    void retryInvalidations(Instant now) {
        if (!invalidationsToRetry.isEmpty()) invalidate(List.of(), now);
    }

    /** Recipients {@link #cancelStranded} ends per transaction, plus those of up to {@link #STRANDED_HANDOVERS} handovers. */
    static final int STRANDED_BATCH = 500;
    static final int STRANDED_HANDOVERS = 5;

    /**
     * Ends the recipients of cancelled notifications whose claim or handover ran out unrecorded (their
     * instance died): {@code cancelled} with {@link DeliveryReasons#CANCELLED}, as the lane that claimed them
     * would have recorded them ({@link #record}, outcome {@link Cancelled}), their frequency-cap slots
     * given back in the same transaction, counted in the outcome metric. Their notification is already
     * terminal (cancelled, its lifecycle fact written by the cancel); once nothing of it is left in
     * flight its final counts are stored ({@link NotificationStates#finishIfDone}). The per-day outcome
     * counters follow the statement (trigger). Run by the recurring task {@link StrandedRecipients#SWEEP}.
     *
     * @return how many recipients it ended (call again until none)
     */
    int cancelStranded(Instant now) {
        List<DeliveryRecipientRepository.Stranded> ended = recipients.inTransaction(() -> {
            List<DeliveryRecipientRepository.Stranded> rows = new ArrayList<>(recipients.cancelStranded(now, STRANDED_BATCH));
            if (!rows.isEmpty()) {
                ArrayNode pairs = JsonNodeFactory.instance.arrayNode(rows.size());
                rows.forEach(r -> pairs.addObject().put("n", r.notificationId().toString()).put("d", r.deviceId().toString()));
                caps.released(pairs.toString());
            }
            // handed recipients hold no frequency-cap slot
            rows.addAll(recipients.cancelStrandedHandovers(now, STRANDED_HANDOVERS));
            return rows;
        });
        if (ended.isEmpty()) return 0;
        Map<Priority, Map<Platform, Integer>> counted = new EnumMap<>(Priority.class);
        for (DeliveryRecipientRepository.Stranded r : ended) {
            counted.computeIfAbsent(r.lane(), k -> new EnumMap<>(Platform.class)).merge(r.platform(), 1, Integer::sum);
        }
        counted.forEach((lane, byPlatform) -> byPlatform.forEach((platform, n) -> engine.cancelledUnsent(lane, platform, n)));
        log.info("{} claimed or handed recipient(s) of cancelled notifications left unrecorded past their lease made cancelled",
                ended.size());
        Map<UUID, UUID> touched = new LinkedHashMap<>();
        ended.forEach(r -> touched.put(r.notificationId(), r.appId()));
        finishAll(touched, false); // their notifications' final counts, once the last stranded recipient is ended
        return ended.size();
    }

    /** Recipients {@link #expireOverdue} ends per transaction. */
    static final int OVERDUE_BATCH = 500;

    /**
     * Ends the waiting recipients of processing notifications whose TTL has run out
     * ({@link DeliveryRecipientRepository#expireOverdue}): {@code expired} with
     * {@link DeliveryReasons#TTL_EXPIRED}, as a lane ends one it claims too late, their frequency-cap slots
     * given back in the same transaction, counted in the outcome metric; then their notifications are
     * finished once nothing is left ({@link NotificationStates#finishIfDone}: exact counts, fact, webhook).
     * The per-day outcome counters follow the statement (trigger). Run by {@link NotificationReconciler}:
     * while a provider's circuit is open no lane claims its recipients, and this is what ends them on time.
     *
     * @return how many recipients it ended (call again until fewer than a batch)
     */
    int expireOverdue(Instant now) {
        List<DeliveryRecipientRepository.Stranded> ended = recipients.inTransaction(() -> {
            List<DeliveryRecipientRepository.Stranded> rows = recipients.expireOverdue(now, OVERDUE_BATCH);
            if (!rows.isEmpty()) {
                ArrayNode pairs = JsonNodeFactory.instance.arrayNode(rows.size());
                rows.forEach(r -> pairs.addObject().put("n", r.notificationId().toString()).put("d", r.deviceId().toString()));
                caps.released(pairs.toString());
            }
            return rows;
        });
        if (ended.isEmpty()) return 0;
        Map<Priority, Map<Platform, Integer>> counted = new EnumMap<>(Priority.class);
        for (DeliveryRecipientRepository.Stranded r : ended) {
            counted.computeIfAbsent(r.lane(), k -> new EnumMap<>(Platform.class)).merge(r.platform(), 1, Integer::sum);
        }
        counted.forEach((lane, byPlatform) -> byPlatform.forEach((platform, n) -> engine.expiredUnsent(lane, platform, n)));
        log.info("{} waiting recipient(s) whose TTL ran out made expired", ended.size());
        Map<UUID, UUID> touched = new LinkedHashMap<>();
        ended.forEach(r -> touched.put(r.notificationId(), r.appId()));
        finishAll(touched, false);
        return ended.size();
    }

    private static Set<UUID> unconfiguredNotifications(ArrayNode pairs) {
        Set<UUID> ids = new LinkedHashSet<>();
        pairs.forEach(p -> ids.add(UUID.fromString(p.path("n").stringValue())));
        return ids;
    }

    /**
     * Finishes the notifications among {@code touched} that have nothing left to send, each in its
     * own transaction: on the delivery pool for a lane's thread ({@code lane}), else on the API pool.
     * Never throws (it runs after commits that must not be undone or repeated): a notification it could
     * not finish is finished by the reconciler ({@link NotificationReconciler}).
     */
    private void finishAll(Map<UUID, UUID> touched, boolean lane) {
        List<UUID> done;
        try {
            done = recipients.nothingLeft(touched.keySet());
        } catch (RuntimeException e) {
            log.warn("Could not look for finished notifications among {}, left to the reconciler: {}", touched.size(),
                    e.toString());
            return;
        }
        // finishIfDone locks the notification: if the fan-out is still setting the count it waits for it
        for (UUID id : done) {
            UUID app = touched.get(id);
            try {
                if (lane) {
                    db.transactions().executeWithoutResult(status -> service.finishIfDone(notifications, reads, lifecycle, app, id));
                } else {
                    service.finishIfDone(app, id);
                }
            } catch (RuntimeException e) {
                log.warn("Notification {} could not be finished, left to the reconciler: {}", id, e.toString());
            }
        }
    }

    @Override
    public Set<UUID> cancelledAmong(Set<UUID> notificationIds) {
        return notificationIds.isEmpty() ? Set.of() : Set.copyOf(recipients.cancelledAmong(notificationIds));
    }

    @Override
    public QueueStats stats(Priority lane, Instant now) {
        return recipients.stats(lane, now);
    }
}
