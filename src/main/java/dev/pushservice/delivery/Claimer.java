package dev.pushservice.delivery;

import dev.pushservice.platform.jobs.BackgroundPriority;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.Priority;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lane's claimer: one platform thread ({@code delivery-<lane>-claimer}) that moves work to the
 * lane's senders, per platform and never more than what the platform's in-flight budget and
 * unrecorded window have free ({@link Lane#free}). Recipients a fan-out page handed over
 * ({@link HandOverQueue}) go first; nothing of a platform is claimed while they wait. Then it claims
 * due recipients from the {@link DeliveryStore}, none of an app whose circuit on a platform without
 * origins (APNs, FCM) is open, but one when that circuit's probe is due ({@link ProviderBreakers#paused}):
 * while a provider is down its recipients wait {@code pending}, untouched, and no lease is taken for them.
 * The transactional lane's claimer also takes, of an app whose circuit a 429 pauses, as many recipients
 * as the circuit's priority rate lets out now ({@link ProviderBreakers#reserve}).
 * Recipients a fan-out page hands over while the circuit is open are not claimed: the senders defer them
 * (their one write, which inserts their row) and claims leave them alone after that. Web Push circuits
 * are per origin, which a claim cannot see: those recipients are claimed and deferred by the senders,
 * once per probe interval of their origin.
 * Every poll interval it also asks the store which notifications of the recipients waiting for a sender
 * were cancelled (possibly by another instance), and every few seconds how much due work waits (the
 * queue metrics).
 *
 * <p>It sleeps until {@link #signal() signalled} (work committed in this process), {@link #wake() woken}
 * (recipients handed over), until budget it waits for frees up ({@link #freed}), or for the poll
 * interval (retries coming due, work from other instances, leases of a dead instance). A platform whose
 * last claim found nothing is not claimed again before committed work or the next poll; one whose sends
 * found their Web Push origin full pauses for a poll interval ({@link Lane#originFull}).
 *
 * <p>Threads: the claimer thread runs every claim, blueprint load and lookup here, and blocks only on
 * the delivery pool's database connections (a claim, a cancel lookup, the queue stats, through the
 * {@link DeliveryStore}) and in its park between passes. It shares the taking of budget and window slots with
 * hand-overs ({@link Lane#handOver}, which send what fits at once on the handing thread): every count and take
 * is made under the lane's lock, and the slots a claim may fill are held for it from before the claim to
 * its end ({@link Lane#beginClaim}, {@link Lane#endClaim}), so what it counted free is still free when it takes it. {@link #signal}, {@link #wake} and {@link #freed} are
 * called from any thread (request threads after a commit, sender threads, Netty I/O threads, the
 * recorder) and never block. {@link #cancelledElsewhere} is read by the sender threads.
 */
final class Claimer {

    private static final Logger log = LoggerFactory.getLogger(Claimer.class);
    private static final Duration STATS_EVERY = Duration.ofSeconds(5);

    private final Lane lane;
    private final Priority priority;
    private final DeliveryStore store;
    private final Map<Platform, PushProvider> providers;
    private final ProviderBreakers breakers;
    private final HandOverQueue handed;
    private final DeliveryProperties properties;
    private final Clock clock;
    private final int minClaim;
    private final DeliveryMetrics.LaneStats stats = new DeliveryMetrics.LaneStats();
    /** Of the notifications waiting for a sender, the ones another instance cancelled (this instance's own cancels are the lane's). */
    private final Set<UUID> cancelledElsewhere = ConcurrentHashMap.newKeySet();
    /** Per platform (by ordinal), until when a claim that found nothing is not repeated; 0: claim. Claimer thread only. */
    private final long[] emptyUntil = new long[Platform.values().length];
    /** Per platform (by ordinal), until when a lease that found no unleased handover is not repeated; 0: look. Claimer thread only. */
    private final long[] noUnleasedUntil = new long[Platform.values().length];
    private volatile Thread thread;
    /**
     * Set by whoever wants the claimer to look again (work committed, budget freed) before it unparks
     * the claimer; cleared by the claimer as it starts a pass. The claimer never parks while it is
     * set, so a wake-up is never lost to the park permit being consumed by some other wait on the
     * claimer's thread (a pooled connection, a lock inside the driver or the executor).
     */
    private volatile boolean wakeUp;
    /** Platforms (bits by ordinal) whose budget the claimer waits for; the first answer that frees enough clears it. */
    private final AtomicInteger waitingForBudget = new AtomicInteger();
    /** Set by {@link #signal()}: work was committed, so platforms found empty are looked at again. */
    private volatile boolean workAdded;

    Claimer(Lane lane, Priority priority, DeliveryStore store, Map<Platform, PushProvider> providers, ProviderBreakers breakers,
            HandOverQueue handed, DeliveryProperties properties, Clock clock, DeliveryMetrics metrics, int minClaim) {
        this.lane = lane;
        this.priority = priority;
        this.store = store;
        this.providers = providers;
        this.breakers = breakers;
        this.handed = handed;
        this.properties = properties;
        this.clock = clock;
        this.minClaim = minClaim;
        metrics.queue(priority, stats);
    }

    /** Starts the claimer thread; the lane is running. */
    void start() {
        // the field is set before the thread runs: an answer that wakes the claimer before start()
        // returns must find the thread to unpark
        Thread c = Thread.ofPlatform().daemon().name("delivery-" + priority.value() + "-claimer").unstarted(this::claimLoop);
        thread = c;
        c.start();
    }

    /** Waits until the claimer thread has ended (the lane stopped running), at most until {@code deadlineNanos}. */
    void join(long deadlineNanos) {
        Thread t = thread;
        if (t == null) return;
        try {
            t.join(Duration.ofNanos(Math.max(1_000_000, deadlineNanos - System.nanoTime())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Work was committed for this lane: look now instead of at the next poll. Cheap, never blocks. */
    void signal() {
        workAdded = true;
        wake();
    }

    /** Look again now (recipients were handed over, budget freed), without claiming platforms found empty again. Never blocks. */
    void wake() {
        wakeUp = true;
        Thread t = thread;
        if (t != null) LockSupport.unpark(t);
    }

    /** Whether another instance cancelled {@code notificationId}, as last learnt. Any thread. */
    boolean cancelledElsewhere(UUID notificationId) {
        return cancelledElsewhere.contains(notificationId);
    }

    /** Wakes the claimer if it waits for {@code platform}'s budget or window and enough is free now. */
    void freed(Platform platform) {
        int waiting = waitingForBudget.get();
        if ((waiting & (1 << platform.ordinal())) != 0 && lane.free(platform) >= minClaim
                && waitingForBudget.compareAndSet(waiting, 0)) {
            wake(); // once: the frees after this one find the flag cleared until the claimer waits again
        }
    }

    private void claimLoop() {
        if (priority != Priority.TRANSACTIONAL) BackgroundPriority.lowerCurrentThread();
        long nextStats = 0;
        long nextCancelCheck = 0;
        while (lane.isRunning()) {
            wakeUp = false; // this pass sees whatever the wake-ups so far announced
            if (System.nanoTime() - nextCancelCheck >= 0) {
                refreshCancelled();
                nextCancelCheck = System.nanoTime() + properties.pollInterval().toNanos();
            }
            if (lane.isPaused() && !handed.anyWaiting()) {
                if (!wakeUp) LockSupport.parkNanos(properties.pollInterval().toNanos());
                continue;
            }
            boolean more = false;
            int blocked = 0;
            if (workAdded) {
                workAdded = false;
                java.util.Arrays.fill(emptyUntil, 0);
                java.util.Arrays.fill(noUnleasedUntil, 0);
            }
            try {
                for (Platform platform : Platform.values()) {
                    // recipients a fan-out handed over go first; nothing of the platform is claimed while they wait
                    if (handed.waiting(platform) > 0) {
                        if (!sendHanded(platform)) {
                            blocked |= 1 << platform.ordinal();
                            continue;
                        }
                        if (handed.waiting(platform) > 0) {
                            more = true;
                            continue;
                        }
                        // the queue ran empty: lease the next handovers now, not at the next poll
                    }
                    if (lane.isPaused()) continue; // handed recipients are still sent, as claimed ones are
                    // then whole handovers a fan-out left for any worker, into the hand-over queue: sent as handed
                    if (leaseHandovers(platform)) {
                        more = true;
                        continue;
                    }
                    int want = Math.min(lane.free(platform), properties.chunkSize());
                    if (want < minClaim) {
                        blocked |= 1 << platform.ordinal();
                        continue;
                    }
                    // a platform whose last claim found nothing waits for committed work or the next poll:
                    // wake-ups for freed budget on another platform do not claim it again
                    long until = emptyUntil[platform.ordinal()];
                    if (until != 0 && System.nanoTime() - until < 0) continue;
                    if (lane.originFull(platform)) continue;
                    // counted again and held for the claim: a hand-over may have taken slots since the look above
                    want = lane.beginClaim(platform, properties.chunkSize());
                    if (want < minClaim) {
                        lane.endClaim(platform, 0);
                        blocked |= 1 << platform.ordinal();
                        continue;
                    }
                    List<DeliveryStore.Claimed> batch;
                    try {
                        batch = claim(platform, want);
                    } catch (RuntimeException e) {
                        lane.endClaim(platform, 0);
                        throw e;
                    }
                    if (!lane.endClaim(platform, batch.size())) {
                        // the slots were held for this claim since beginClaim: no other taker touched them
                        throw new IllegalStateException("lane budget changed under the claimer");
                    }
                    if (batch.isEmpty()) {
                        emptyUntil[platform.ordinal()] = (System.nanoTime() + properties.pollInterval().toNanos()) | 1;
                        continue;
                    }
                    emptyUntil[platform.ordinal()] = 0;
                    lane.dispatch(batch);
                    if (batch.size() == want) more = true;
                }
                if (System.nanoTime() - nextStats >= 0) {
                    refreshStats();
                    nextStats = System.nanoTime() + STATS_EVERY.toNanos();
                }
            } catch (RuntimeException e) {
                log.warn("Delivery lane {} could not claim work, retrying at the next poll: {}", priority.value(),
                        e.toString());
                more = false;
            }
            if (more) continue;
            // Published before looking at the budgets once more: an answer that frees budget after this
            // look sees the flag and wakes this thread; one that freed it before is seen by the look.
            waitingForBudget.set(blocked);
            if (!wakeUp && !budgetFreed(blocked)) LockSupport.parkNanos(properties.pollInterval().toNanos());
            waitingForBudget.set(0);
        }
    }

    /**
     * Moves up to the free in-flight budget of {@code platform}'s handed recipients to the senders.
     * Returns false when the budget is too small to be worth it now (the claimer then waits for budget),
     * true otherwise.
     */
    private boolean sendHanded(Platform platform) {
        List<DeliveryStore.Claimed> batch = lane.takeHanded(platform);
        if (batch.isEmpty()) return handed.waiting(platform) == 0; // none left (a hand-over sent them), or too little budget
        lane.dispatch(batch);
        return true;
    }

    /**
     * Leases whole unleased handovers of {@code platform} (the part of a fan-out page its own lane did not
     * take, V59) into the lane's hand-over queue, as many as its free room holds, none of an app whose
     * circuit on the platform is open (as {@link #claim}). Returns whether it leased any; a look that finds
     * none is not repeated before committed work or the next poll.
     */
    private boolean leaseHandovers(Platform platform) {
        long until = noUnleasedUntil[platform.ordinal()];
        if (until != 0 && System.nanoTime() - until < 0) return false;
        int room = lane.reserve(platform, lane.room(platform));
        if (room == 0) return false; // the queue is full: what waits in it goes first
        List<DeliveryStore.Claimed> leased;
        try {
            Instant now = clock.instant();
            PushProvider provider = providers.get(platform);
            ProviderBreakers.Paused paused = provider == null || provider.hasOrigins()
                    ? ProviderBreakers.Paused.NONE : breakers.paused(platform, now, priority == Priority.TRANSACTIONAL);
            leased = store.leaseHandovers(priority, platform, room, now, properties.lease(),
                    paused.none() ? DeliveryStore.Apps.ALL : DeliveryStore.Apps.except(paused.all()));
        } catch (RuntimeException e) {
            lane.release(platform, room);
            throw e;
        }
        lane.release(platform, room - leased.size());
        if (leased.isEmpty()) {
            noUnleasedUntil[platform.ordinal()] = (System.nanoTime() + properties.pollInterval().toNanos()) | 1;
            return false;
        }
        noUnleasedUntil[platform.ordinal()] = 0;
        lane.handOver(leased);
        return true;
    }

    /**
     * Claims up to {@code want} of {@code platform}'s due recipients, none of an app whose circuit on it
     * is open ({@link ProviderBreakers#paused}): they stay {@code pending}, their rows untouched, rather
     * than being claimed and deferred every probe interval. For each such app whose probe is due, one
     * recipient is claimed, which its sender then sends as the probe. A platform whose provider has
     * several origins (Web Push) is claimed whole: its circuits are per origin, which the claim cannot
     * see; its recipients of an open origin are deferred by the senders.
     */
    private List<DeliveryStore.Claimed> claim(Platform platform, int want) {
        Instant now = clock.instant();
        PushProvider provider = providers.get(platform);
        ProviderBreakers.Paused paused = provider == null || provider.hasOrigins()
                ? ProviderBreakers.Paused.NONE : breakers.paused(platform, now, priority == Priority.TRANSACTIONAL);
        if (paused.none()) {
            return store.claim(priority, platform, want, now, properties.lease());
        }
        List<DeliveryStore.Claimed> batch = new ArrayList<>();
        for (UUID app : paused.probeDue()) {
            if (batch.size() >= want) break;
            batch.addAll(store.claim(priority, platform, 1, now, properties.lease(), DeliveryStore.Apps.only(app)));
        }
        // transactional recipients of an app whose circuit a 429 pauses: as many as it lets out now
        for (UUID app : paused.priorityDue()) {
            if (batch.size() >= want) break;
            ProviderBreakers.Circuit circuit = new ProviderBreakers.Circuit(app, platform, null);
            int reserved = breakers.reserve(circuit, want - batch.size(), now);
            if (reserved == 0) continue;
            int used = 0;
            try {
                List<DeliveryStore.Claimed> claimed = store.claim(priority, platform, reserved, now, properties.lease(),
                        DeliveryStore.Apps.only(app));
                batch.addAll(claimed);
                for (DeliveryStore.Claimed c : claimed) if (c.unsendable() == null) used++;
            } finally {
                breakers.unreserve(circuit, reserved - used);
            }
        }
        if (batch.size() < want) {
            batch.addAll(store.claim(priority, platform, want - batch.size(), now, properties.lease(),
                    DeliveryStore.Apps.except(paused.all())));
        }
        return batch;
    }

    private boolean budgetFreed(int platforms) {
        if (platforms == 0) return false;
        for (Platform p : Platform.values()) {
            if ((platforms & (1 << p.ordinal())) != 0 && lane.free(p) >= minClaim) return true;
        }
        return false;
    }

    /**
     * Learns which notifications of the recipients waiting for a sender were cancelled, possibly by
     * another instance, so they are never handed over. One indexed lookup by id, and only while
     * something waits.
     */
    private void refreshCancelled() {
        Set<UUID> waiting = lane.waitingNotifications();
        if (waiting.isEmpty()) {
            cancelledElsewhere.clear();
            return;
        }
        try {
            Set<UUID> found = store.cancelledAmong(Set.copyOf(waiting));
            cancelledElsewhere.addAll(found);
            cancelledElsewhere.retainAll(waiting);
        } catch (RuntimeException e) {
            log.warn("Delivery lane {} could not check for cancelled notifications, retrying at the next poll: {}",
                    priority.value(), e.toString());
        }
    }

    private void refreshStats() {
        DeliveryStore.QueueStats q = store.stats(priority, clock.instant());
        stats.depth = q.depth();
        stats.oldestAgeSeconds = q.oldestDueAge().toMillis() / 1000.0;
    }
}
