package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.Platform;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.pushservice.platform.config.PushProperties;
import dev.pushservice.platform.config.Role;
import dev.pushservice.platform.jobs.WorkerPresence;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Delivers due recipients through the providers, one {@link Lane} per {@link Priority}, each with
 * its own capacity: its own threads, its own in-flight budget per provider, its own connections in
 * the delivery pool ({@link dev.pushservice.platform.db.DeliveryDatabase}). A bulk fan-out to hundreds of thousands of devices
 * can fill the bulk lane completely and a transactional send still finds a free claimer, a free
 * sender, free in-flight slots and a free connection. The budgets of all lanes for one provider add
 * up to less than the provider's own in-flight limit (900 of 1,000 by default), so no lane ever
 * waits inside a provider for a slot another lane holds.
 *
 * <p>Hand-over: code that commits work for a lane calls {@link #signalAfterCommit}; the lane's
 * claimer wakes right after the commit instead of at its next poll. Polling every
 * {@code push.delivery.poll-interval} remains the safety net (retries coming due, other instances'
 * work, recipients whose claiming instance died). {@link #cancelled} makes senders in this process
 * drop recipients of a cancelled notification that were claimed but not yet handed to a provider;
 * other instances never claim them again, and their lanes learn of the cancel from the store within
 * a poll interval ({@link DeliveryStore#cancelledAmong}) and drop theirs too.
 *
 * <p>Runs only in instances with the {@code worker} role, and only once a {@link DeliveryStore}
 * exists. The core sees only the {@link PushProvider} contract. Thread-safe.
 */
@Component
public class DeliveryEngine implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(DeliveryEngine.class);
    /** The most a cancel waits, over all lanes, for sends already past their cancel check to be written. */
    static final Duration CANCEL_FENCE_WAIT = Duration.ofSeconds(1);

    private final DeliveryProperties properties;
    private final ObjectProvider<DeliveryStore> stores;
    private final ObjectProvider<PushProviders> providers;
    private final boolean worker;
    private final Clock clock;
    private final ObjectProvider<MeterRegistry> registry;
    private final ProviderBreakers breakers;
    private final ObjectProvider<WorkerPresence> presence;
    private volatile DeliveryMetrics metrics; // written under this, once
    private final Cache<UUID, Boolean> cancelled = Caffeine.newBuilder()
            .maximumSize(100_000).expireAfterWrite(Duration.ofHours(1)).build();
    private final Cache<UUID, Optional<Blueprint>> blueprints = Caffeine.newBuilder()
            .maximumSize(10_000).expireAfterAccess(Duration.ofMinutes(10)).build();
    private volatile DeliveryStore store;
    private final Map<Priority, Lane> lanes = new EnumMap<>(Priority.class);
    private volatile boolean running;
    private volatile boolean paused;

    /** Providers, store and meters are resolved at start, and only where the engine runs (not in the admin CLI). */
    DeliveryEngine(DeliveryProperties properties, ObjectProvider<DeliveryStore> stores, ObjectProvider<PushProviders> providers,
                   PushProperties push, Clock clock, ObjectProvider<MeterRegistry> registry, ProviderBreakers breakers,
                   ObjectProvider<WorkerPresence> presence) {
        this.breakers = breakers;
        this.presence = presence;
        // the lanes claim none of an open circuit's recipients: when it closes they are claimed at once, not at the next poll
        breakers.onClosed(() -> {
            for (Priority p : Priority.values()) signal(p);
        });
        this.properties = properties;
        this.stores = stores;
        this.providers = providers;
        this.worker = push.hasRole(Role.WORKER);
        this.clock = clock;
        this.registry = registry;
    }

    private static Map<Platform, PushProvider> byPlatform(PushProviders providers) {
        Map<Platform, PushProvider> map = new EnumMap<>(Platform.class);
        for (Platform p : Platform.values()) {
            try {
                map.put(p, providers.forPlatform(p));
            } catch (IllegalStateException none) {
                // this instance cannot deliver to p: its recipients fail with no_provider
            }
        }
        return Map.copyOf(map);
    }

    /** Wakes {@code lane}'s claimer now. Cheap and non-blocking; a no-op where the engine does not run. */
    public void signal(Priority lane) {
        Lane l = lanes.get(lane);
        if (l != null) l.signal();
    }

    /**
     * Wakes {@code lane}'s claimer once the current transaction commits (at once without one), so the
     * work it committed is claimed within milliseconds rather than at the next poll.
     */
    public void signalAfterCommit(Priority lane) {
        if (TransactionSynchronizationManager.isSynchronizationActive()) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    signal(lane);
                }
            });
        } else {
            signal(lane);
        }
    }

    /**
     * {@code notificationId} was cancelled (call after the commit, before the cancel answers): recipients of
     * it that this process claimed but has not handed to a provider yet are recorded cancelled instead of
     * sent. Returns once the sends that had passed their cancel check before it are written
     * (at most {@link #CANCEL_FENCE_WAIT}; {@link SendFence}), so nothing of it leaves this process after the
     * answer.
     */
    public void cancelled(UUID notificationId) {
        cancelled.put(notificationId, Boolean.TRUE);
        long deadline = System.nanoTime() + CANCEL_FENCE_WAIT.toNanos(); // one wait for all lanes
        for (Lane lane : List.copyOf(lanes.values())) {
            if (!lane.awaitStartedSends(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())))) {
                log.warn("Notification {} cancelled: sends of lane {} that passed their cancel check were not written within {}",
                        notificationId, lane.priority().value(), CANCEL_FENCE_WAIT);
            }
        }
    }

    /**
     * Stops claiming work in this instance (maintenance, tests of what precedes delivery): recipients
     * stay {@code pending}; what was claimed already is still sent and recorded. Other instances go on.
     */
    public void pause() {
        paused = true;
        lanes.values().forEach(l -> l.paused(true));
    }

    /** Claims work again after {@link #pause()}. */
    public void resume() {
        paused = false;
        lanes.values().forEach(l -> l.paused(false));
    }

    /**
     * {@code count} recipients of {@code lane} and {@code platform} that the store's claim ended
     * unsent by a rule of its own ({@code reason}, such as a frequency cap): counted under
     * {@code push_delivery_outcomes_total} with outcome {@code skipped}, one increment for all.
     */
    public void skipped(Priority lane, Platform platform, String reason, int count) {
        DeliveryMetrics m = metrics();
        if (m != null) m.outcomes(lane, platform, DeliveryMetrics.SKIPPED, reason, count);
    }

    /**
     * {@code count} claimed recipients of {@code lane} and {@code platform} that the store recorded
     * {@code cancelled} without a lane (their notification was cancelled and the instance that claimed
     * them died before recording them): counted under {@code push_delivery_outcomes_total} with outcome
     * {@code cancelled} and reason {@link DeliveryReasons#CANCELLED}, as a lane counts its own, one
     * increment for all. Counted in any instance with a meter registry, the engine running or not (the
     * store's sweep runs in the {@code scheduler} role).
     */
    public void cancelledUnsent(Priority lane, Platform platform, int count) {
        DeliveryMetrics m = metrics();
        if (m != null) m.outcomes(lane, platform, DeliveryMetrics.CANCELLED, DeliveryReasons.CANCELLED, count);
    }

    /**
     * {@code count} recipients of {@code lane} and {@code platform} that the store made {@code expired}
     * without a lane (their TTL ran out while they waited, e.g. behind an open provider circuit):
     * counted under {@code push_delivery_outcomes_total} with outcome {@code expired} and reason
     * {@link DeliveryReasons#TTL_EXPIRED}, as a lane counts its own, one increment for all.
     */
    public void expiredUnsent(Priority lane, Platform platform, int count) {
        DeliveryMetrics m = metrics();
        if (m != null) m.outcomes(lane, platform, "expired", DeliveryReasons.TTL_EXPIRED, count);
    }

    /** The meters, made on first use where the engine does not run (none without a registry). */
    private DeliveryMetrics metrics() {
        DeliveryMetrics m = metrics;
        if (m != null) return m;
        synchronized (this) {
            if (metrics == null) {
                MeterRegistry r = registry.getIfAvailable();
                if (r != null) metrics = new DeliveryMetrics(r);
            }
            return metrics;
        }
    }

    /**
     * Reserves room in {@code priority}'s lane for recipients a fan-out page hands
     * straight over ({@link Handover}), or returns null: the engine does not run here, is paused,
     * hand-over is off ({@code push.delivery.handoff}), or the lane has no room for the page; the page
     * then leaves its recipients {@code pending} for any instance's claim.
     *
     * <p>With several worker instances alive ({@link WorkerPresence}, N of them), the page is a whole
     * page ({@code max} devices) and this instance takes only its share of it: per platform at most
     * 1/N of the page's devices of that platform (as {@code seen} predicts them; 1/N of the page for
     * each platform without a previous page), and no more than the lane's free room. Nothing waits:
     * a lane without room gets nothing, and the rest of the page is written claimable at once, so
     * every worker claims its part of the send from the first page on, and the fan-out instance's
     * lane delivers about its 1/N (its handed share, then its own claims). An instance that dies
     * delays only what it held: its handover's lease and its claims' leases run out and others take them.
     *
     * <p>With one worker (this one) the hand-over carries the whole send, as the gain is largest
     * there: the lane keeps a queue per platform of handed recipients waiting for in-flight budget,
     * twice as large as the budget, so the next page is inserted while the previous one is sent.
     * {@code seen} counts the devices per platform (by ordinal) of the notification's previous page:
     * the page's size ({@link Handover#limit()}) is what the free room of the platform with the most
     * room takes at that mix, so a page of an all-iOS audience is not cut short by the room of other
     * platforms, and a mixed audience is not held back by its slowest platform (its recipients beyond
     * its room are left for the claim); without a previous page it is the largest free room. It waits,
     * up to {@code wait}, until a page of at least the lane's
     * in-flight budget fits (or {@code max}, if smaller): fewer, larger pages cost PostgreSQL less
     * (each is a transaction with a lock, a cursor update and a commit), and a budget's worth still
     * waits in the queue while it is inserted. Waiting is the fan-out keeping pace with the only lane
     * there is: what a page left pending would be claimed by this lane anyway, at the cost of a claim.
     * Past {@code wait} it takes whatever is free. Never called on a Netty I/O thread.
     */
    public Handover reserve(Priority priority, int max, int[] seen, Duration wait) {
        Lane lane = lanes.get(priority);
        if (!running || !properties.handoff() || lane == null || !lane.accepting() || max < 1) return null;
        long total = 0;
        for (int n : seen) total += n;
        int workers = workers();
        if (workers > 1) return share(lane, max, seen, total, workers);
        int want = Math.min(max, lane.capacity());
        long deadline = System.nanoTime() + wait.toNanos();
        int limit;
        while (true) {
            limit = limit(lane, seen, total, max);
            if (limit >= want) break;
            if (System.nanoTime() - deadline >= 0) {
                if (limit < 1) return null;
                break;
            }
            LockSupport.parkNanos(HANDOVER_WAIT_STEP);
            if (!running || !lane.accepting()) return null;
        }
        // every platform, not only those of the previous page: where the audience turns from one
        // platform to the next, the page's new platform finds room too (what it does not use goes back
        // at the commit)
        int[] reserved = new int[Platform.values().length];
        for (Platform p : Platform.values()) reserved[p.ordinal()] = lane.reserve(p, limit);
        return new Handover(this, lane, reserved, limit, clock.instant().plus(properties.lease()));
    }

    /** Live worker instances as this one last saw them (1 without presence). */
    private int workers() {
        WorkerPresence p = presence.getIfAvailable();
        return p == null ? 1 : Math.max(1, p.workers());
    }

    /**
     * This instance's share of a page of {@code max} devices with {@code workers} workers alive (see
     * {@link #reserve}): per platform, 1/{@code workers} of its devices in the page as {@code seen}
     * predicts them, within the lane's free room, without waiting; possibly none (the page is then left
     * whole to the other workers' leases).
     */
    private Handover share(Lane lane, int max, int[] seen, long total, int workers) {
        int[] reserved = new int[Platform.values().length];
        for (Platform p : Platform.values()) {
            long expected = total == 0 ? max : (long) Math.ceil((double) max * seen[p.ordinal()] / total);
            int share = (int) Math.min(Integer.MAX_VALUE, (expected + workers - 1) / workers);
            reserved[p.ordinal()] = share == 0 ? 0 : lane.reserve(p, share);
        }
        // with no room at all the page still goes out as handovers: all of it unleased, for whichever
        // worker's lane frees room first (V59), rather than as a pending row per recipient
        return new Handover(this, lane, reserved, max, clock.instant().plus(properties.lease()));
    }

    private static final long HANDOVER_WAIT_STEP = TimeUnit.MILLISECONDS.toNanos(1);

    /**
     * The page size the lane's free hand-over room takes at the platform mix {@code seen}: the page
     * is as large as the platform with the most room (relative to its share) fills, so the fan-out
     * keeps pace with the fastest platform of the audience, never the slowest. Each platform then
     * hands over what its room takes; the rest of a slower platform's recipients are left
     * {@code pending}, and its claim takes them at that platform's own pace. (Sizing pages by the
     * slowest platform held every platform of a mixed send at the pace of a slow push service.)
     */
    private static int limit(Lane lane, int[] seen, long total, int max) {
        double limit = 0;
        for (Platform p : Platform.values()) {
            int room = lane.room(p);
            if (total == 0) {
                limit = Math.max(limit, room);
            } else if (seen[p.ordinal()] > 0) {
                limit = Math.max(limit, room * (double) total / seen[p.ordinal()]);
            }
        }
        return (int) Math.min(max, limit);
    }

    /** The blueprint a hand-over sends: the lanes find it without reading the store. */
    void knownBlueprint(Blueprint blueprint) {
        blueprints.put(blueprint.notificationId(), Optional.of(blueprint));
    }

    /** Messages of {@code lane} handed to {@code platform}'s provider and not yet answered. */
    public int inFlight(Priority lane, Platform platform) {
        Lane l = lanes.get(lane);
        return l == null ? 0 : l.inFlight(platform);
    }

    @Override
    public synchronized void start() {
        if (running) return;
        if (!worker) return;
        DeliveryStore store = stores.getIfAvailable();
        if (store == null) {
            log.info("No delivery store: the delivery engine does not run");
            return;
        }
        this.store = store;
        Map<Platform, PushProvider> byPlatform = byPlatform(providers.getObject());
        if (metrics == null) metrics = new DeliveryMetrics(registry.getObject());
        for (Priority p : Priority.values()) {
            Lane lane = lanes.computeIfAbsent(p, k -> new Lane(k, store, byPlatform,
                    c -> blueprints.get(c.notificationId(), id -> this.store.blueprint(c.appId(), id)),
                    id -> cancelled.getIfPresent(id) != null, properties, clock, metrics, breakers));
            lane.paused(paused);
            lane.start();
        }
        running = true;
        log.info("Delivery engine started: lanes {} with in-flight budgets {} per platform, providers {}",
                lanes.keySet(), properties.lanes(), byPlatform.keySet());
    }

    @Override
    public void stop() {
        if (!running) return;
        running = false;
        // lanes drain in parallel: a long bulk drain must not hold up the transactional lane's
        List<Thread> stopping = new ArrayList<>();
        for (Lane lane : lanes.values()) {
            stopping.add(Thread.ofPlatform().name("delivery-stop-" + lane.priority().value())
                    .start(() -> lane.stop(Duration.ofSeconds(10))));
        }
        for (Thread t : stopping) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Stops with the web server's graceful shutdown and the job worker, before providers close. */
    @Override
    public int getPhase() {
        return WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE;
    }
}
