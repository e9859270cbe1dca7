package dev.pushservice.notifications;

import com.github.kagkarlsson.scheduler.task.Task;
import com.github.kagkarlsson.scheduler.task.TaskDescriptor;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import dev.pushservice.apps.AppSettingsService;
import dev.pushservice.apps.DeliveryTiming;
import dev.pushservice.delivery.Blueprint;
import dev.pushservice.delivery.DeliveryStore;
import dev.pushservice.delivery.Handover;
import dev.pushservice.lifecycle.LifecycleEventRepository;
import dev.pushservice.lifecycle.LifecycleEventRepository.Kind;
import dev.pushservice.platform.jobs.DeadLetters;
import dev.pushservice.platform.jobs.PermanentJobFailure;
import dev.pushservice.platform.jobs.RetryPolicy;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.TimeZones;
import dev.pushservice.platform.rules.WallClockTimes;
import dev.pushservice.segments.FilterCompiler;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentVersion;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * Fan-out: turns a due notification's audience snapshot into recipient rows, then hands over to
 * delivery ({@link DeliveryHandoff}). Runs as the durable db-scheduler task {@value #TASK_NAME}
 * (one instance per notification, named by its id), enqueued in the transaction that queues the
 * notification: its creation for an immediate one; for a draft, the transaction of
 * {@link DueDrafts} that finds it due by the application clock.
 *
 * <p>Steps, each its own transaction, each safe to repeat after a crash:
 * <ol>
 *   <li>{@code draft} → {@code queued} (due) → {@code processing}, with their lifecycle facts;</li>
 *   <li>pages of {@value #DEFAULT_PAGE_SIZE} recipients, each one {@code INSERT … SELECT} over the
 *       devices in the order of {@code devices_app_created_idx}, resuming from a cursor stored with
 *       the page ({@code ON CONFLICT DO NOTHING} makes a replayed page harmless); each page checks
 *       the notification is still processing under its row lock, so a cancel stops the fan-out and
 *       no recipient is added after it. A page due at once goes in part straight to this instance's
 *       lane ({@link Handover}): it lists what the lane takes in a leased handover instead of
 *       inserting them (recording inserts them with their outcome), handed to the lane after the
 *       commit; the rest are listed in unleased handovers (V59: pending, one per platform and run of up
 *       to {@code Handover#unleasedChunk} recipients), each leased whole by whichever worker's lane has
 *       room first, so every worker's share is batched as the fan-out's own is. How much the lane
 *       takes depends on the worker instances alive (see {@code DeliveryEngine#reserve}): with
 *       several, a whole page of which this instance's share (1/N per platform, within its free room,
 *       never waiting for room), so every worker delivers its part of the send; with this one alone,
 *       a page sized to the room of the platform with the most of it, waiting up to
 *       {@link #HANDOVER_WAIT} for it, so the fan-out keeps pace with the fastest platform of the
 *       audience, and a slow one (a slow Web Push service) gets its recipients through its own
 *       claims, at its own pace;</li>
 *   <li>the recipient count is set once, delivery is told, and a notification without recipients
 *       completes at once.</li>
 * </ol>
 * Thread-safe; one execution per notification at a time (db-scheduler picks an instance once).
 */
@Component
public class NotificationFanOut {

    static final String TASK_NAME = "notification-fanout";
    static final TaskDescriptor<Data> TASK = TaskDescriptor.of(TASK_NAME, Data.class);
    static final int DEFAULT_PAGE_SIZE = 5000;
    /**
     * The audience member of a notification the service made for a list of users
     * ({@link NotificationService#createForUsers}): their ids. Its target has a type of its own.
     */
    static final String AUDIENCE_USERS = "user_ids";
    /** Content that reads the recipient's tags or properties gets them frozen per recipient. */
    private static final Pattern USER_PLACEHOLDER = Pattern.compile("\\{\\{[ \\t]*(tags|properties)\\.");

    /** A recipient held by quiet hours until or past its TTL: expired at once, never sent. */
    static final String EXPIRED_IN_QUIET_HOURS = "ttl_expired_quiet_hours";
    /** A recipient whose throttle slot would come after its TTL: expired at once, never sent. */
    static final String EXPIRED_BY_THROTTLE = "ttl_expired_throttle";

    private static final Logger log = LoggerFactory.getLogger(NotificationFanOut.class);

    /** Task data: JSON in {@code scheduled_tasks}; add fields, never rename or remove them. */
    public record Data(UUID appId, UUID notificationId) {
    }

    private final NotificationRepository notifications;
    private final FanOutPageRepository pages;
    private final NotificationStates states;
    private final SegmentService segments;
    private final FilterCompiler compiler;
    private final LifecycleEventRepository lifecycle;
    private final ObjectProvider<DeliveryHandoff> handoff;
    private final TransactionTemplate transactions;
    private final JsonMapper json;
    private final Clock clock;
    private final AppSettingsService appSettings;
    private final SendThrottleRepository throttles;
    private final RecipientStatistics statistics;
    private final int pageSize;

    NotificationFanOut(NotificationRepository notifications, FanOutPageRepository pages, NotificationStates states,
                       SegmentService segments,
                       FilterCompiler compiler, LifecycleEventRepository lifecycle, ObjectProvider<DeliveryHandoff> handoff,
                       TransactionTemplate transactions, JsonMapper json, Clock clock, AppSettingsService appSettings,
                       SendThrottleRepository throttles, RecipientStatistics statistics,
                       @Value("${push.notifications.fanout-page-size:" + DEFAULT_PAGE_SIZE + "}") int pageSize) {
        if (pageSize < 1) throw new IllegalArgumentException("push.notifications.fanout-page-size must be at least 1");
        this.notifications = notifications;
        this.pages = pages;
        this.states = states;
        this.segments = segments;
        this.compiler = compiler;
        this.lifecycle = lifecycle;
        this.handoff = handoff;
        this.transactions = transactions;
        this.json = json;
        this.clock = clock;
        this.appSettings = appSettings;
        this.throttles = throttles;
        this.statistics = statistics;
        this.pageSize = pageSize;
    }

    /**
     * The whole fan-out of a queued notification in the caller's transaction (every step's
     * {@link TransactionTemplate} joins it): the same states, lifecycle facts, pages, send-time
     * rules, {@link DeliveryHandoff} calls and logs as the task, committed with the caller's writes.
     * Delivery is signalled after that commit. For audiences known to be tiny: the notification's
     * creation for a device or user target, a notification the service makes for a list of users.
     * No task is enqueued for such a notification, so nothing fans it out a second time.
     */
    public void materializeNow(UUID appId, UUID notificationId) {
        if (!org.springframework.transaction.support.TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("materializeNow must run in the caller's transaction");
        }
        run(new Data(appId, notificationId), Duration.ZERO, true);
    }

    void run(Data data) {
        run(data, HANDOVER_WAIT, false);
    }

    /**
     * How long a page waits for room in this instance's lane ({@link Handover}) before it leaves its
     * recipients {@code pending} for any instance's claim, when this instance is the only worker alive
     * (with several, a page never waits: what its share finds no room for is written claimable at
     * once). Waiting is the fan-out keeping pace with the only lane there is (with its fastest
     * platform: a page never waits for the room of a slower one): recipients a page leaves pending
     * are claimed by that lane too, at the cost of a claim statement each. The fan-out of a tiny
     * audience in its creation's transaction never waits.
     */
    static final Duration HANDOVER_WAIT = Duration.ofSeconds(2);

    /** {@code inCallersTransaction}: every statement joins the caller's transaction (materializing at creation). */
    private void run(Data data, Duration handoverWait, boolean inCallersTransaction) {
        UUID app = data.appId();
        UUID id = data.notificationId();
        NotificationRepository.Row row = transactions.execute(status -> start(app, id));
        if (row == null) return;
        DeliveryHandoff delivery = handoff.getIfAvailable(() -> DeliveryHandoff.NONE);
        FanOutPageRepository.RenderValues renderValues = renderValues(row.content());
        if (row.recipientCount() == null) {
            FanOutPageRepository.AudienceSql audience = audience(app, row.audience());
            long total = 0;
            long handedTotal = 0;
            int pages = 0;
            Timing timing = timing(row);
            Blueprint blueprint = timing.pageTimes() instanceof FanOutPageRepository.Times.AtOnce ? handoverBlueprint(row) : null;
            int[] seen = new int[Platform.values().length];
            // in the caller's transaction (a tiny audience) no ANALYZE: it would hold its lock to the commit
            RecipientStatistics.Run stats = inCallersTransaction ? null : statistics.run(id);
            while (true) {
                // in the caller's transaction the row start() locked is current for the first page (no page
                // has moved its cursor yet): no second lock of it; a later page reads it again
                NotificationRepository.Row known = inCallersTransaction && pages == 0 ? row : null;
                Handover handover = blueprint == null ? null
                        : delivery.handover(app, row.priority(), pageSize, seen, handoverWait);
                int limit = handover == null ? pageSize : handover.limit();
                List<DeliveryStore.Claimed> handed = new ArrayList<>();
                FanOutPageRepository.PageResult page;
                try {
                    page = transactions.execute(status -> {
                        // first: from here, the commit hands over what the page's handover lists, anything else releases
                        if (handover != null) afterPage(handover, handed, blueprint);
                        NotificationRepository.Row current = known != null ? known : notifications.lock(app, id).orElse(null);
                        if (current == null || !NotificationService.PROCESSING.equals(current.status())) return null;
                        var result = handover != null ? handedPage(current, audience, timing, renderValues, handover, handed, seen)
                                : timing.pageTimes() != null ? page(current, audience, timing, renderValues)
                                : timedPage(current, audience, timing, renderValues);
                        if (result.lastAt() != null) {
                            notifications.saveCursor(app, id, result.lastAt(), result.lastId(), result.inserted());
                        }
                        // recipients left pending (all of a page without a hand-over) are for a claim
                        int pending = result.inserted() - handed.size();
                        if (pending > 0) delivery.recipientsAdded(app, id, current.priority(), pending);
                        return result;
                    });
                } catch (RuntimeException e) {
                    if (handover != null) handover.release(); // a transaction that never began; else no effect
                    throw e;
                }
                if (page == null) {
                    log.info("Notification {}: fan-out stopped, no longer processing", id);
                    return;
                }
                total += page.inserted();
                if (stats != null) stats.inserted(total);
                handedTotal += handed.size();
                pages++;
                if (page.selected() < limit) break;
            }
            log.info("Notification {}: {} recipient(s) inserted by this run in {} page(s), {} of them handed straight to"
                    + " this instance's delivery", id, total, pages, handedTotal);
        }
        Boolean finished = transactions.execute(status -> {
            // in the caller's transaction nothing else can have changed the row since start() locked it
            // (nothing it inserted is delivered, let alone recorded, before the commit): its status and
            // priority are still those
            NotificationRepository.Row current = inCallersTransaction ? row : notifications.lock(app, id).orElse(null);
            if (current == null || !NotificationService.PROCESSING.equals(current.status())) return false;
            var count = notifications.setRecipientCount(app, id, clock.instant());
            if (count.isEmpty()) return false; // a previous run finished materializing
            log.info("Notification {}: {} recipient(s) materialized", id, count.get());
            if (count.get() == 0) states.finishIfDone(app, id);
            delivery.materialized(app, id, current.priority(), count.get(), inCallersTransaction);
            return true;
        });
        if (Boolean.TRUE.equals(finished)) log.debug("Notification {}: handed over to delivery", id);
    }

    /**
     * What decides this run's recipients' send times: the notification's own fields and the app's
     * timing settings, read once per run. Transactional notifications are exempt from quiet hours
     * and the throttle (a one-time code must not wait behind a campaign or for the morning).
     */
    private record Timing(SendTimes times, Integer perMinute, ZoneId defaultZone,
                          FanOutPageRepository.Times pageTimes) {
    }

    private Timing timing(NotificationRepository.Row row) {
        boolean exempt = Priority.TRANSACTIONAL.value().equals(row.priority());
        Instant sendTime = row.queuedAt() != null ? row.queuedAt() : row.createdAt();
        Instant localOrigin = row.scheduledAt() != null ? row.scheduledAt() : sendTime;
        LocalTime localTime = row.localDeliveryTime() == null ? null : WallClockTimes.parse(row.localDeliveryTime());
        // a transactional notification without a local delivery time is due at once whatever the app's
        // timing settings say (exempt from quiet hours and the throttle, no zone to place it in): no read
        DeliveryTiming settings = exempt && localTime == null ? UNTIMED : appSettings.deliveryTiming(row.appId());
        SendTimes times = new SendTimes(sendTime, localOrigin, localTime, row.ttl(), exempt ? null : settings.quietHours());
        Integer perMinute = exempt ? null : settings.throttlePerMinute();
        FanOutPageRepository.Times pageTimes = null; // throttled: timed per device (timedPage)
        if (!times.zoned() && perMinute == null) {
            // every recipient due at once, with the notification's expiry: the one-statement page
            pageTimes = new FanOutPageRepository.Times.AtOnce(row.ttl() == null ? null : sendTime.plusSeconds(row.ttl()));
        } else if (perMinute == null) {
            // every zone's times, once per run (a few hundred zones, microseconds each): the page
            // statement joins each recipient's zone to them, so no page has to be read first
            ArrayNode all = JsonNodeFactory.instance.arrayNode();
            for (String name : TimeZones.all()) {
                FanOutPageRepository.ZonedTimes z = zoned(times.plan(ZoneId.of(name)));
                all.addObject().put("z", name).put("d", z.due().toString())
                        .put("x", z.expiresAt() == null ? null : z.expiresAt().toString()).put("e", z.expiredReason());
            }
            pageTimes = new FanOutPageRepository.Times.PerZone(all.toString(), zoned(times.plan(settings.defaultZone())));
        }
        return new Timing(times, perMinute, settings.defaultZone(), pageTimes);
    }

    /** What {@link #timing} uses where the app's timing settings cannot apply: none of them is read. */
    private static final DeliveryTiming UNTIMED = new DeliveryTiming(java.time.ZoneOffset.UTC, null, null);

    private static FanOutPageRepository.ZonedTimes zoned(SendTimes.Plan plan) {
        return new FanOutPageRepository.ZonedTimes(plan.due(), plan.expiresAt(),
                plan.expired() ? EXPIRED_IN_QUIET_HOURS : null);
    }

    /**
     * One page due at once whose first recipients per platform, as many as {@code handover} has room
     * for, are listed in a leased handover and handed to this instance's lane after the commit (no row, no claim);
     * the rest are listed in unleased handovers, for any worker's lease. A page that does not commit gives the
     * room back. Leaves the page's devices per platform in {@code seen}.
     */
    private FanOutPageRepository.PageResult handedPage(NotificationRepository.Row current,
                                                       FanOutPageRepository.AudienceSql audience, Timing timing,
                                                       FanOutPageRepository.RenderValues renderValues, Handover handover,
                                                       List<DeliveryStore.Claimed> handed, int[] seen) {
        int[] room = new int[Platform.values().length];
        for (Platform p : Platform.values()) room[p.ordinal()] = handover.room(p);
        Instant expiresAt = ((FanOutPageRepository.Times.AtOnce) timing.pageTimes()).expiresAt();
        FanOutPageRepository.HandedPage page = pages.insertHanded(next(current, audience, handover.limit()), expiresAt,
                new FanOutPageRepository.Handing(room, handover.leaseEnd(), handover.unleasedChunk()), renderValues, clock.instant());
        // the next page's mix is predicted by this one's: audiences are read in creation order, where
        // platforms come in runs (an app's iOS users first, its web users later) as often as mixed
        System.arraycopy(page.selectedPerPlatform(), 0, seen, 0, seen.length);
        handed.addAll(page.handed());
        return page.page();
    }

    /**
     * After the page's transaction: its commit hands {@code handed} (what the page's handover lists,
     * filled in by then) to the lane and gives back the unused room; a rollback, or a page that handed
     * nothing over, gives it all back.
     */
    private static void afterPage(Handover handover, List<DeliveryStore.Claimed> handed, Blueprint blueprint) {
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCommit() {
                handover.deliver(handed, blueprint);
            }

            @Override
            public void afterCompletion(int status) {
                handover.release(); // no effect after deliver
            }
        });
    }

    /**
     * What a hand-over sends for {@code row}, or null when its content does not compile (a bug: then
     * no page is handed over, and the claim path fails its recipients as it always did).
     */
    private static Blueprint handoverBlueprint(NotificationRepository.Row row) {
        try {
            return RecipientDelivery.blueprint(row);
        } catch (RuntimeException e) {
            log.warn("Notification {}: no hand-over, its blueprint could not be built: {}", row.id(), e.toString());
            return null;
        }
    }

    /**
     * One page whose recipients' times are known before it is read (due at once, or by their zone: no
     * throttle): one statement, and for a zoned page the latest due time kept.
     */
    private FanOutPageRepository.PageResult page(NotificationRepository.Row current, FanOutPageRepository.AudienceSql audience,
                                                 Timing timing, FanOutPageRepository.RenderValues renderValues) {
        var result = pages.insert(next(current, audience, pageSize), timing.pageTimes(), renderValues, clock.instant());
        if (result.lastDue() != null) notifications.extendLastDue(current.appId(), current.id(), result.lastDue());
        return result;
    }

    /** The next page of {@code current}'s audience, from its cursor, up to {@code size} devices. */
    private static FanOutPageRepository.Page next(NotificationRepository.Row current,
                                                  FanOutPageRepository.AudienceSql audience, int size) {
        return new FanOutPageRepository.Page(current.appId(), current.id(), audience, current.audienceAt(),
                current.cursorAt(), current.cursorId(), size);
    }

    /**
     * One throttled page: the page's devices are read, each zone's times
     * computed once ({@link SendTimes}), throttle slots taken in due order ({@link SendSlots}, under
     * the app's throttle lock), and the page inserted in one statement. Three statements more than a
     * plain page (read, slots read and written), none per recipient.
     */
    private FanOutPageRepository.PageResult timedPage(NotificationRepository.Row current,
                                                      FanOutPageRepository.AudienceSql audience, Timing timing,
                                                      FanOutPageRepository.RenderValues renderValues) {
        UUID app = current.appId();
        Instant now = clock.instant();
        List<FanOutPageRepository.PageDevice> devices = pages.selectPage(next(current, audience, pageSize));
        if (devices.isEmpty()) return new FanOutPageRepository.PageResult(0, 0, null, null);
        int n = devices.size();
        SendTimes.Plan[] plans = new SendTimes.Plan[n];
        Map<String, ZoneId> zones = new HashMap<>();
        for (int i = 0; i < n; i++) {
            plans[i] = timing.times().plan(zone(devices.get(i), zones, timing.defaultZone()));
        }
        long[] due = new long[n];
        Long[] expires = new Long[n];
        String[] expired = new String[n];
        SendSlots slots = null;
        if (timing.perMinute() != null) {
            throttles.lock(app);
            throttles.prune(app, now.minus(Duration.ofHours(1)));
            slots = new SendSlots(throttles, app, timing.perMinute());
        }
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) order[i] = i;
        // slots go out in due order; the sort is stable, so equal due times keep the device order
        if (slots != null) Arrays.sort(order, Comparator.comparing(i -> plans[i].due()));
        Instant last = null;
        for (int i : order) {
            SendTimes.Plan plan = plans[i];
            expires[i] = plan.expiresAt() == null ? null : micros(plan.expiresAt());
            due[i] = micros(plan.due());
            if (plan.expired()) {
                expired[i] = EXPIRED_IN_QUIET_HOURS;
                continue;
            }
            if (slots != null) {
                long slot = slots.take(due[i], t -> plan.sendable(instant(t)));
                if (slot < 0) {
                    expired[i] = EXPIRED_BY_THROTTLE;
                    continue;
                }
                due[i] = slot;
            }
            Instant at = instant(due[i]);
            if (last == null || at.isAfter(last)) last = at;
        }
        if (slots != null) slots.flush();
        List<UUID> ids = devices.stream().map(FanOutPageRepository.PageDevice::id).toList();
        int inserted = pages.insertTimed(app, current.id(), new FanOutPageRepository.Times.PerDevice(ids, due, expires, expired),
                renderValues, now);
        if (last != null) notifications.extendLastDue(app, current.id(), last);
        FanOutPageRepository.PageDevice end = devices.getLast();
        return new FanOutPageRepository.PageResult(n, inserted, end.createdAt(), end.id());
    }

    /** The recipient's zone: the device's, else its user's, else the app's; names that are no IANA zone are passed over. */
    private static ZoneId zone(FanOutPageRepository.PageDevice device, Map<String, ZoneId> zones, ZoneId fallback) {
        for (String name : new String[] {device.deviceZone(), device.userZone()}) {
            if (name == null) continue;
            ZoneId zone = zones.computeIfAbsent(name, z -> TimeZones.isValid(z) ? ZoneId.of(z) : null);
            if (zone != null) return zone;
        }
        return fallback;
    }

    private static long micros(Instant at) {
        return at.getEpochSecond() * 1_000_000L + at.getNano() / 1_000;
    }

    private static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    /** What each recipient of a notification with {@code content} gets frozen at fan-out. */
    FanOutPageRepository.RenderValues renderValues(JsonNode content) {
        JsonNode localizations = content.get("localizations");
        return new FanOutPageRepository.RenderValues(USER_PLACEHOLDER.matcher(json.writeValueAsString(content)).find(),
                localizations != null && !localizations.isEmpty());
    }

    /** Moves the notification to processing; null when there is nothing to do (cancelled, terminal, gone). */
    private NotificationRepository.Row start(UUID app, UUID id) {
        NotificationRepository.Row row = notifications.lock(app, id).orElse(null);
        if (row == null || row.terminal()) return null;
        // stored processing by its creation (materialized at once), or a run resumed after a crash or a retry
        if (NotificationService.PROCESSING.equals(row.status())) return row;
        Instant now = clock.instant();
        if (NotificationService.DRAFT.equals(row.status())) {
            notifications.setStatus(app, id, NotificationService.QUEUED, "queued_at", now);
            lifecycle.record(app, Kind.NOTIFICATION_QUEUED, id, Map.of("notification_id", id), now);
            log.info("Notification {} due: queued", id);
        }
        NotificationRepository.Row started = notifications.startProcessing(app, id, now);
        lifecycle.record(app, Kind.NOTIFICATION_PROCESSING, id, Map.of("notification_id", id), now);
        log.info("Notification {} processing: materializing recipients", id);
        return started;
    }

    /**
     * The audience as SQL over {@code devices d}: target ∩ (any included segment, when given) −
     * every excluded segment, each segment at the version snapshotted at creation.
     */
    FanOutPageRepository.AudienceSql audience(UUID app, JsonNode audience) {
        StringBuilder joins = new StringBuilder();
        List<String> predicates = new ArrayList<>();
        Map<String, Object> params = new LinkedHashMap<>();
        JsonNode target = audience.path("target");
        switch (target.path("type").stringValue()) {
            case "all" -> {
            }
            case "device" -> {
                predicates.add("d.id = :t_device");
                params.put("t_device", UUID.fromString(target.path("device_id").stringValue()));
            }
            case "user" -> {
                predicates.add("d.user_id in (select u.id from users u where u.app_id = :app and u.external_user_id = :t_user)");
                params.put("t_user", target.path("external_user_id").stringValue());
            }
            case "tag" -> {
                predicates.add("d.user_id in (select u.id from users u where u.app_id = :app and u.tags @> cast(:t_tag as jsonb))");
                params.put("t_tag", json.writeValueAsString(Map.of(target.path("key").stringValue(), target.path("value").stringValue())));
            }
            case "segment" -> {
                FilterCompiler.Compiled c = compiler.compile(app, version(app, audience.path("segment")).filter(), "ts");
                joins.append(' ').append(c.joins());
                predicates.add("(" + c.predicate() + ")");
                params.putAll(c.params());
            }
            default -> {
                // a notification the service made for a list of users (its target says by what, e.g. a journey)
                JsonNode users = audience.get(AUDIENCE_USERS);
                if (users == null) throw new PermanentJobFailure("unknown target type in notification audience");
                StringBuilder ids = new StringBuilder("{");
                for (JsonNode u : users) {
                    if (ids.length() > 1) ids.append(',');
                    ids.append(UUID.fromString(u.stringValue()));
                }
                predicates.add("d.user_id = any(cast(:t_users as uuid[]))");
                params.put("t_users", ids.append('}').toString());
            }
        }
        List<String> included = new ArrayList<>();
        int i = 0;
        for (JsonNode s : audience.path("included")) {
            FilterCompiler.Compiled c = compiler.compile(app, version(app, s).filter(), "inc" + i++);
            joins.append(' ').append(c.joins());
            included.add("(" + c.predicate() + ")");
            params.putAll(c.params());
        }
        if (!included.isEmpty()) predicates.add("coalesce(" + String.join(" or ", included) + ", false)");
        i = 0;
        for (JsonNode s : audience.path("excluded")) {
            FilterCompiler.Compiled c = compiler.compile(app, version(app, s).filter(), "exc" + i++);
            // an anti-join: NOT IN over a subquery never becomes one (its NULL semantics), so PostgreSQL
            // evaluated it as a hashed subplan rebuilt for every page. Inside the derived table "d" is its
            // own devices row (the compiled filter names it so); outside it, "d" is the audience's device
            predicates.add("not exists (select 1 from (select d.id from devices d " + c.joins()
                    + " where d.app_id = :app and (" + c.predicate() + ")) excluded_" + (i - 1) + " where excluded_" + (i - 1)
                    + ".id = d.id)");
            params.putAll(c.params());
        }
        return new FanOutPageRepository.AudienceSql(joins.toString(),
                predicates.isEmpty() ? "true" : String.join(" and ", predicates), params);
    }

    private SegmentVersion version(UUID app, JsonNode ref) {
        UUID segmentId = UUID.fromString(ref.path("segment_id").stringValue());
        int version = ref.path("version").intValue();
        return segments.version(app, segmentId, version).orElseThrow(() ->
                new PermanentJobFailure("segment " + segmentId + " version " + version + " of the audience snapshot is missing"));
    }

    /** The fan-out task: retried with backoff (a database hiccup), then dead-lettered. */
    @Configuration(proxyBeanMethods = false)
    static class FanOutTaskConfiguration {

        @Bean
        Task<Data> notificationFanOutTask(NotificationFanOut fanOut, DeadLetters deadLetters) {
            return Tasks.oneTime(TASK)
                    .onFailure(deadLetters.handler(new RetryPolicy(8, Duration.ofSeconds(1), Duration.ofMinutes(5))))
                    .execute((instance, context) -> fanOut.run(instance.getData()));
        }
    }
}
