package dev.pushservice.delivery;

import dev.pushservice.platform.jobs.BackgroundPriority;
import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.Platform;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One priority lane with its own capacity: a claimer thread, a recorder thread, a few sender
 * threads, and per platform an in-flight budget (a {@link Semaphore}). Nothing here is shared with
 * another lane except the providers' event loops (which never block) and the delivery pool (which
 * has a connection for each of this lane's two database threads).
 *
 * <ul>
 *   <li>The claimer ({@link Claimer}, one thread) takes due recipients from the {@link DeliveryStore},
 *       per platform and never more than that platform's free budget and window, and hands them to the
 *       senders; recipients a fan-out page handed over ({@link HandOverQueue}) go first. Handed recipients
 *       that fit the free budget go to the senders at once, from the thread that hands them over (after
 *       its commit): they never wait for the claimer, which may be inside a database call for seconds
 *       on a busy database; the claimer sends the rest as budget frees. It sleeps until
 *       {@link #signal() signalled} (work committed in this process), until budget frees up, or for
 *       the poll interval. It leaves out the apps whose APNs or FCM circuit is open
 *       ({@link ProviderBreakers#paused}) but for their probes.</li>
 *   <li>Senders render each message and hand it to its provider, at most half the platform's budget
 *       to one push-service origin at a time ({@link OriginGates}: a slow Web Push service cannot take
 *       the budget of the others). Unless its notification was
 *       cancelled: then it is never handed over. A cancel taken by this instance is known at once
 *       ({@link DeliveryEngine#cancelled}); one taken by another instance is learnt by the claimer,
 *       which asks the store every poll interval which notifications of the recipients still waiting
 *       for a sender were cancelled.</li>
 *   <li>A provider's answer arrives on a Netty I/O thread. There only non-blocking work happens:
 *       the outcome is decided (pure), queued for the recorder, the budget slot released.</li>
 *   <li>The recorder ({@link Recorder}) writes queued outcomes in batches of up to a chunk, one transaction each, and
 *       only then frees their slots of the platform's unrecorded window: a recipient holds a window
 *       slot from its claim (or hand-over) until its outcome is recorded, so the window (twice the
 *       in-flight budget) bounds what is sent and not yet recorded, and the queue of outcomes, however
 *       slow recording gets. Twice the budget, so a batch is recorded while the next budget's worth
 *       is in flight.</li>
 * </ul>
 * Thread-safe; {@link #start()} and {@link #stop(Duration)} alternate.
 */
final class Lane {

    private static final Logger log = LoggerFactory.getLogger(Lane.class);
    private static final int SLICE = 50;

    private final Priority priority;
    private final DeliveryStore store;
    private final Map<Platform, PushProvider> providers;
    private final Function<DeliveryStore.Claimed, Optional<Blueprint>> blueprints;
    private final Predicate<UUID> cancelled;
    private final DeliveryProperties properties;
    private final RetryBackoff backoff;
    private final Clock clock;
    private final DeliveryMetrics metrics;
    private final ProviderBreakers breakers;
    private final Map<Platform, Semaphore> budgets = new EnumMap<>(Platform.class);
    /**
     * Per platform, the unrecorded window: twice the in-flight budget. A recipient holds a slot from its
     * claim (or hand-over to the senders) until its outcome is recorded; a claim never takes more than
     * both the budget and the window have free.
     */
    private final Map<Platform, Semaphore> windows = new EnumMap<>(Platform.class);
    /** Per platform, the lane's requests open and waiting per push-service origin ({@link PushProvider#origin}). */
    private final Map<Platform, OriginGates<Send>> origins = new EnumMap<>(Platform.class);
    /**
     * Per platform (by ordinal), until when claims pause because a send found its origin full (0: no
     * pause): the claim cannot choose recipients by origin, so claiming at once would mostly give the
     * full origin's recipients back again. Written by sender threads, read by the claimer.
     */
    private final AtomicLongArray originFullUntil = new AtomicLongArray(Platform.values().length);
    /**
     * Guards every count-then-take of budget and window slots: the claimer's (for a claim or for handed
     * recipients) and a hand-over's ({@link #handOver}, on the handing thread). Held only to count and take,
     * never across a database call.
     */
    private final Object slots = new Object();
    /** Per platform (by ordinal), the slots held for the claimer's claim in progress (0: none). Guarded by {@link #slots}. */
    private final int[] claiming = new int[Platform.values().length];
    /** Recipients handed over by fan-out pages and not yet sent, with the room pages reserve for them. */
    private final HandOverQueue handed;
    private final Recorder recorder;
    private final int capacity;
    private final int minClaim;
    /** Notifications with recipients handed to the senders and not yet to a provider: slices of each. */
    private final ConcurrentHashMap<UUID, Integer> waiting = new ConcurrentHashMap<>();
    private final SendFence fence = new SendFence();
    private final Claimer claimer;
    private volatile ExecutorService senders;
    private volatile boolean running;
    private volatile boolean paused;

    Lane(Priority priority, DeliveryStore store, Map<Platform, PushProvider> providers,
         Function<DeliveryStore.Claimed, Optional<Blueprint>> blueprints, Predicate<UUID> cancelled, DeliveryProperties properties,
         Clock clock, DeliveryMetrics metrics) {
        this(priority, store, providers, blueprints, cancelled, properties, clock, metrics,
                new ProviderBreakers(BreakerProperties.defaults(), (MeterRegistry) null));
    }

    Lane(Priority priority, DeliveryStore store, Map<Platform, PushProvider> providers,
         Function<DeliveryStore.Claimed, Optional<Blueprint>> blueprints, Predicate<UUID> cancelled, DeliveryProperties properties,
         Clock clock, DeliveryMetrics metrics, ProviderBreakers breakers) {
        this.breakers = breakers;
        this.priority = priority;
        this.store = store;
        this.providers = providers;
        this.blueprints = blueprints;
        this.cancelled = cancelled;
        this.properties = properties;
        this.backoff = properties.backoff();
        this.clock = clock;
        this.metrics = metrics;
        this.capacity = properties.lanes().get(priority).inFlight();
        this.minClaim = Math.max(1, Math.min(properties.chunkSize(), capacity) / 4);
        for (Platform platform : Platform.values()) {
            Semaphore budget = new Semaphore(capacity);
            budgets.put(platform, budget);
            windows.put(platform, new Semaphore(2 * capacity));
            origins.put(platform, OriginGates.forBudget(capacity));
            metrics.inFlight(priority, platform, budget, capacity);
        }
        this.handed = new HandOverQueue(2 * capacity, priority, metrics);
        this.claimer = new Claimer(this, priority, store, providers, breakers, handed, properties, clock, metrics, minClaim);
        this.recorder = new Recorder(priority, store, clock, properties.chunkSize(), () -> running, this::anyInFlight,
                this::anyUnrecorded, this::recorded);
    }

    Priority priority() {
        return priority;
    }

    /** Starts the lane's threads; after {@link #stop} it may be started again. */
    void start() {
        AtomicInteger n = new AtomicInteger();
        senders = new ThreadPoolExecutor(properties.senderThreads(), properties.senderThreads(), 0, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Runnable work = priority == Priority.TRANSACTIONAL ? r : () -> {
                        BackgroundPriority.lowerCurrentThread(); // API requests first when the cores are all busy
                        r.run();
                    };
                    Thread t = new Thread(work, "delivery-" + priority.value() + "-sender-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        running = true;
        recorder.start();
        claimer.start();
    }

    /** Work was committed for this lane: look now instead of at the next poll. Cheap, never blocks. */
    void signal() {
        claimer.signal();
    }

    /** Whether the lane runs (started and not stopping): the claimer's loop ends when it does not. */
    boolean isRunning() {
        return running;
    }

    /** Whether claiming is paused ({@link #paused(boolean)}); handed recipients are still sent. */
    boolean isPaused() {
        return paused;
    }

    /** Stops or resumes claiming; what was claimed already is still sent and recorded. */
    void paused(boolean paused) {
        this.paused = paused;
        if (!paused) signal();
    }

    /** Whether recipients may be handed to this lane now (started, not stopping, not paused). */
    boolean accepting() {
        return running && !paused;
    }

    /** The in-flight budget per platform; the hand-over room per platform is twice that. */
    int capacity() {
        return capacity;
    }

    /** Free room in {@code platform}'s hand-over queue. */
    int room(Platform platform) {
        return handed.room(platform);
    }

    /** Takes up to {@code max} of {@code platform}'s free hand-over room without waiting; returns how much it took. */
    int reserve(Platform platform, int max) {
        return handed.reserve(platform, max);
    }

    /** Gives back hand-over room {@link #reserve} took and no recipient used. */
    void release(Platform platform, int n) {
        handed.release(platform, n);
    }

    /**
     * Queues recipients handed to this lane without a claim (a fan-out page's handover, after its
     * commit), each holding the hand-over room {@link #reserve} took for its
     * platform; the claimer sends them before it claims anything of that platform, as in-flight
     * budget frees, and gives their room back as they go.
     */
    void handOver(List<DeliveryStore.Claimed> recipients) {
        if (recipients.isEmpty()) return;
        int[] n = handed.add(recipients);
        for (Platform p : Platform.values()) if (n[p.ordinal()] > 0) metrics.handedOver(priority, p, n[p.ordinal()]);
        // sent from here, on the handing thread, as far as the budget goes: the claimer may be inside a
        // database call (a claim, the queue stats) that takes seconds on a busy database, and what it has not
        // moved yet would wait for it
        if (running) {
            for (Platform p : Platform.values()) {
                if (n[p.ordinal()] == 0) continue;
                List<DeliveryStore.Claimed> batch = takeHanded(p);
                if (batch.isEmpty()) continue;
                try {
                    dispatch(batch);
                } catch (RuntimeException e) {
                    // their blueprint could not be loaded (slots given back): sent when their handover's lease ends
                    log.warn("Delivery lane {} could not send {} handed recipient(s); left to their lease: {}", priority.value(),
                            batch.size(), e.toString());
                }
            }
        }
        // not signal(): nothing was added to the store, so platforms found empty need no claim again
        if (handed.anyWaiting()) claimer.wake();
    }

    /**
     * Takes up to the free budget of {@code platform}'s handed recipients, with their budget and window
     * slots, for {@link #dispatch}: none while a claim of the platform is in progress (its slots are
     * held for it), and none when fewer than the least worth a dispatch fit (a lane's quarter budget, or
     * all that wait if fewer): the claimer then waits for budget. Any thread; never blocks.
     */
    List<DeliveryStore.Claimed> takeHanded(Platform platform) {
        synchronized (slots) {
            if (claiming[platform.ordinal()] > 0) return List.of();
            int waitingToSend = handed.waiting(platform);
            int n = Math.min(free(platform), waitingToSend);
            if (n == 0 || n < Math.min(minClaim, waitingToSend) || !acquire(platform, n)) return List.of();
            List<DeliveryStore.Claimed> batch = handed.take(platform, n);
            if (batch.size() < n) releaseSlots(platform, n - batch.size());
            return batch;
        }
    }

    /**
     * Counts the slots a claim of {@code platform} may fill (at most {@code max}) and holds them for it
     * until {@link #endClaim}: a hand-over meanwhile takes none of that platform's. Claimer thread.
     */
    int beginClaim(Platform platform, int max) {
        synchronized (slots) {
            int want = Math.min(free(platform), max);
            claiming[platform.ordinal()] = Math.max(0, want);
            return want;
        }
    }

    /**
     * The claim {@link #beginClaim} began returned {@code claimed} recipients: takes their slots (false if
     * they are not there, a bug) and lets go of the rest. Claimer thread.
     */
    boolean endClaim(Platform platform, int claimed) {
        synchronized (slots) {
            claiming[platform.ordinal()] = 0;
            return claimed == 0 || acquire(platform, claimed);
        }
    }

    /** Messages of this lane handed to {@code platform}'s sender or provider and not answered yet. */
    int inFlight(Platform platform) {
        return capacity - budgets.get(platform).availablePermits();
    }

    /** Recipients of this lane and {@code platform} claimed or handed to the senders and not recorded yet. */
    int unrecorded(Platform platform) {
        return 2 * capacity - windows.get(platform).availablePermits();
    }

    /** How many of {@code platform}'s recipients may go to the senders now: what both the budget and the window have free. */
    int free(Platform platform) {
        return Math.min(budgets.get(platform).availablePermits(), windows.get(platform).availablePermits());
    }

    /** Takes {@code n} slots of the budget and of the window; false when either has fewer free. Under {@link #slots}. */
    private boolean acquire(Platform platform, int n) {
        if (!windows.get(platform).tryAcquire(n)) return false;
        if (budgets.get(platform).tryAcquire(n)) return true;
        windows.get(platform).release(n);
        return false;
    }

    /** Gives back {@code n} slots of the budget and of the window (recipients that will not be sent). */
    void releaseSlots(Platform platform, int n) {
        budgets.get(platform).release(n);
        windows.get(platform).release(n);
    }

    /**
     * Stops claiming, waits up to {@code wait} for answers to what was handed over and records them.
     * Recipients claimed and not recorded by then are claimed again when their lease runs out.
     */
    void stop(Duration wait) {
        running = false;
        signal();
        long deadline = System.nanoTime() + wait.toNanos();
        claimer.join(deadline);
        int left = 0;
        for (Platform platform : Platform.values()) left += handed.drain(platform);
        if (left > 0) log.info("Delivery lane {} stops with {} handed recipient(s) unsent: sent when their lease runs out",
                priority.value(), left);
        senders.shutdown();
        try {
            senders.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // sends waiting for their origin are not started any more: left to their lease
        for (OriginGates<Send> gates : origins.values()) {
            for (Send waiting : gates.drain()) releaseBudget(List.of(waiting.recipient()));
        }
        while (System.nanoTime() < deadline && anyUnrecorded()) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
        recorder.stop(deadline);
        senders.shutdownNow();
    }

    private boolean anyInFlight() {
        for (Platform p : Platform.values()) if (inFlight(p) > 0) return true;
        return false;
    }

    private boolean anyUnrecorded() {
        for (Platform p : Platform.values()) if (unrecorded(p) > 0) return true;
        return false;
    }

    // ---- claiming ------------------------------------------------------------------------------

    /** Whether sends found {@code platform}'s origin full lately: its claims pause a poll interval (see {@link #originFullUntil}). Claimer thread. */
    boolean originFull(Platform platform) {
        long full = originFullUntil.get(platform.ordinal());
        return full != 0 && System.nanoTime() - full < 0;
    }

    /** The notifications with recipients handed to the senders and not yet to a provider (a live view). */
    Set<UUID> waitingNotifications() {
        return waiting.keySet();
    }

    /**
     * Waits (at most {@code max}) until every send of this lane that passed its cancel check before this
     * call has been written (or handed to Pushy): after a cancel's mark is set, nothing of it goes out once this
     * returns true. The cancelling (request) thread.
     */
    boolean awaitStartedSends(Duration max) {
        return fence.awaitEarlier(max);
    }

    private boolean isCancelled(UUID notificationId) {
        return cancelled.test(notificationId) || claimer.cancelledElsewhere(notificationId);
    }

    /**
     * Loads the blueprints of {@code batch} and hands it to the senders in slices, its budget and window
     * slots taken. Claimer thread: a database thread, so senders never touch the database. Throws when a
     * blueprint cannot be loaded (the slots given back; the recipients are claimed again when their lease
     * runs out).
     */
    void dispatch(List<DeliveryStore.Claimed> batch) {
        // blueprints are loaded here, on the claimer (a database thread), so senders never touch the database
        Map<UUID, Optional<Blueprint>> byNotification = new HashMap<>();
        try {
            for (DeliveryStore.Claimed c : batch) {
                if (!byNotification.containsKey(c.notificationId())) byNotification.put(c.notificationId(), blueprints.apply(c));
            }
        } catch (RuntimeException e) {
            releaseBudget(batch);
            throw e; // the claimed recipients are claimed again when their lease runs out
        }
        for (int from = 0; from < batch.size(); from += SLICE) {
            List<DeliveryStore.Claimed> slice = batch.subList(from, Math.min(batch.size(), from + SLICE));
            Set<UUID> notifications = notificationsOf(slice);
            notifications.forEach(id -> waiting.merge(id, 1, Integer::sum));
            try {
                senders.execute(() -> {
                    try {
                        send(slice, byNotification);
                    } finally {
                        notifications.forEach(id -> waiting.computeIfPresent(id, (k, n) -> n == 1 ? null : n - 1));
                    }
                });
            } catch (RuntimeException rejected) { // shutting down: leave them to their lease
                notifications.forEach(id -> waiting.computeIfPresent(id, (k, n) -> n == 1 ? null : n - 1));
                releaseBudget(slice);
            }
        }
    }

    /** Gives back the budget and window slots of recipients that will not be sent (a batch may mix platforms when handed over). */
    private void releaseBudget(List<DeliveryStore.Claimed> recipients) {
        int[] n = new int[Platform.values().length];
        for (DeliveryStore.Claimed c : recipients) n[c.platform().ordinal()]++;
        for (Platform p : Platform.values()) if (n[p.ordinal()] > 0) releaseSlots(p, n[p.ordinal()]);
    }

    private static Set<UUID> notificationsOf(List<DeliveryStore.Claimed> slice) {
        UUID first = slice.getFirst().notificationId();
        Set<UUID> ids = null;
        for (DeliveryStore.Claimed c : slice) {
            if (!c.notificationId().equals(first)) {
                if (ids == null) ids = new HashSet<>();
                ids.add(c.notificationId());
            }
        }
        if (ids == null) return Set.of(first);
        ids.add(first);
        return ids;
    }

    // ---- sending -------------------------------------------------------------------------------

    private void send(List<DeliveryStore.Claimed> slice, Map<UUID, Optional<Blueprint>> byNotification) {
        for (DeliveryStore.Claimed recipient : slice) {
            if (recipient.unsendable() != null) {
                // already failed by the claim (its device went away after the fan-out): counted, never sent
                finish(recipient, new DeliveryStore.Rejected(recipient, recipient.unsendable(), false, null),
                        "rejected", recipient.unsendable());
                continue;
            }
            Optional<Blueprint> blueprint = byNotification.get(recipient.notificationId());
            if (blueprint.isEmpty() || isCancelled(recipient.notificationId())) {
                finish(recipient, new DeliveryStore.Cancelled(recipient), "cancelled", DeliveryReasons.CANCELLED);
                continue;
            }
            PushProvider provider = providers.get(recipient.platform());
            if (provider == null) {
                finish(recipient, new DeliveryStore.Rejected(recipient, DeliveryReasons.NO_PROVIDER, false, null),
                        "rejected", DeliveryReasons.NO_PROVIDER);
                continue;
            }
            Instant expiresAt = blueprint.get().expiresAt(recipient);
            Integer ttl = blueprint.get().ttlSeconds();
            if (expiresAt != null && ttl != null && ttl > 0 && !clock.instant().isBefore(expiresAt)) {
                // its TTL ran out before this send (a slow queue, a long pause): never sent late.
                // A TTL of 0 means "now or never" and is still tried once.
                finish(recipient, new DeliveryStore.GaveUp(recipient, DeliveryReasons.TTL_EXPIRED, RetryBackoff.EXPIRED),
                        "expired", DeliveryReasons.TTL_EXPIRED);
                continue;
            }
            PushMessage message;
            try {
                message = blueprint.get().message(recipient, clock.instant());
            } catch (RuntimeException e) {
                log.warn("Notification {}: the message for device {} could not be built: {}", recipient.notificationId(),
                        recipient.deviceId(), e.getClass().getSimpleName());
                finish(recipient, new DeliveryStore.Rejected(recipient, DeliveryReasons.RENDER_FAILED, false, null),
                        "rejected", DeliveryReasons.RENDER_FAILED);
                continue;
            }
            String origin;
            try {
                origin = provider.origin(message);
            } catch (RuntimeException e) {
                origin = null; // the provider's send decides what becomes of a token it cannot read
            }
            // the provider's circuit is open: back to pending without a request or an attempt (see ProviderBreakers)
            ProviderBreakers.Circuit circuit = new ProviderBreakers.Circuit(recipient.appId(), recipient.platform(), origin);
            // a transactional recipient may pass a 429's pause at the priority rate (ProviderBreakers#admit)
            ProviderBreakers.Admission admission = breakers.admit(circuit, clock.instant(), priority == Priority.TRANSACTIONAL);
            if (admission instanceof ProviderBreakers.Wait wait) {
                defer(recipient, wait.reason(), wait.until(), expiresAt);
                continue;
            }
            ProviderBreakers.Send admitted = (ProviderBreakers.Send) admission;
            boolean probe = admitted.probe();
            Send send = new Send(recipient, provider, message, expiresAt, origin, circuit, probe, admitted.priority());
            if (origin == null) {
                start(send);
                continue;
            }
            switch (origins.get(recipient.platform()).admit(origin, send)) {
                case SEND -> start(send);
                case WAIT -> {
                    // started by the answer that frees a slot of its origin (startWaiting)
                }
                case FULL -> {
                    // its origin holds as much of the budget as one origin may: back to pending, due a poll
                    // interval later, its attempt given back (never sent); the platform's claims pause as long,
                    // so a slow origin's recipients are not claimed and given back over and over. A probe let
                    // out by the breaker is handed back to it unsent.
                    if (probe) unsentProbe(send);
                    originFullUntil.set(recipient.platform().ordinal(), (System.nanoTime() + properties.pollInterval().toNanos()) | 1);
                    finish(recipient, new DeliveryStore.Deferred(recipient, DeliveryReasons.ORIGIN_BUSY,
                            clock.instant().plus(properties.pollInterval())), "deferred", DeliveryReasons.ORIGIN_BUSY);
                }
            }
        }
    }

    /**
     * A rendered message on its way to {@code provider}; {@code origin}: its push service, when the provider
     * has several; {@code prioritized}: let through its circuit's 429 pause ({@link ProviderBreakers.Send#priority()}).
     */
    private record Send(DeliveryStore.Claimed recipient, PushProvider provider, PushMessage message, Instant expiresAt,
                        String origin, ProviderBreakers.Circuit circuit, boolean probe, boolean prioritized) {
    }

    /** A probe the breaker let out that will not be sent after all: the breaker lets out another. */
    private void unsentProbe(Send send) {
        breakers.answered(send.circuit(), true, ProviderBreakers.Answer.NONE, null, null, clock.instant());
    }

    /**
     * Hands {@code send} to its provider. A sender thread. A send whose notification was cancelled since
     * its recipient was first looked at (rendering, the breaker, its origin's queue) is dropped here, the
     * last moment before the request: its origin's slot, if it took one, passes on.
     */
    private void start(Send send) {
        DeliveryStore.Claimed recipient = send.recipient();
        long started = System.nanoTime();
        CompletableFuture<DeliveryResult> answer = null;
        // from the check until the request is written: a cancel answers only once such sends are out (SendFence)
        SendFence.Pass written = fence.enter();
        try {
            if (!isCancelled(recipient.notificationId())) {
                metrics.sent(priority, recipient.platform()); // counted within the fence: final once a cancel has waited
                try {
                    answer = send.provider().send(send.message(), written);
                } catch (RuntimeException e) {
                    answer = CompletableFuture.failedFuture(e);
                }
            }
        } finally {
            if (answer == null) written.run();
        }
        if (answer == null) { // cancelled
            if (send.probe()) unsentProbe(send);
            finish(recipient, new DeliveryStore.Cancelled(recipient), "cancelled", DeliveryReasons.CANCELLED);
            if (send.origin() != null) startWaiting(recipient.platform(), origins.get(recipient.platform()).answered(send.origin()));
            return;
        }
        answer.whenComplete((result, error) -> written.run()); // at the latest, whatever the provider does
        // runs on a Netty I/O thread (or here, if already answered): decide, queue, pass the origin's slot on; never block
        answer.whenComplete((result, error) -> {
            if (send.origin() != null) startWaiting(recipient.platform(), origins.get(recipient.platform()).answered(send.origin()));
            metrics.answered(priority, recipient.platform(), System.nanoTime() - started);
            if (error != null) {
                // a broken provider contract: retried like a transient failure, never dropped
                breakers.answered(send.circuit(), send.probe(), ProviderBreakers.Answer.NONE, null, null, clock.instant());
                onFailure(recipient, DeliveryReasons.PROVIDER_ERROR, null, send.expiresAt(), false, null, null);
            } else {
                ProviderBreakers.Answer kind = ProviderBreakers.classify(result);
                Instant openUntil = breakers.answered(send.circuit(), send.probe(), send.prioritized(), kind,
                        result instanceof DeliveryResult.Failed f ? f.reason().code() : null,
                        result instanceof DeliveryResult.Failed f ? f.retryAfter() : null, clock.instant());
                onAnswer(recipient, result, send.expiresAt(), kind, openUntil, send.prioritized());
            }
        });
    }

    /**
     * {@code next} (null: none) waited for a slot of its origin and has it now: hands it to a sender
     * thread, never sending on the calling (I/O) thread. A waiting send of a notification cancelled
     * meanwhile passes the slot on instead; one the stopping lane can no longer send is left to its lease.
     */
    private void startWaiting(Platform platform, Send next) {
        while (next != null) {
            Send waited = next;
            try {
                senders.execute(() -> {
                    if (isCancelled(waited.recipient().notificationId())) {
                        if (waited.probe()) unsentProbe(waited);
                        finish(waited.recipient(), new DeliveryStore.Cancelled(waited.recipient()), "cancelled", DeliveryReasons.CANCELLED);
                        startWaiting(platform, origins.get(platform).answered(waited.origin()));
                    } else {
                        start(waited);
                    }
                });
                return;
            } catch (RejectedExecutionException stopping) {
                if (waited.probe()) unsentProbe(waited);
                releaseBudget(List.of(waited.recipient()));
                next = origins.get(platform).answered(waited.origin());
            }
        }
    }

    private void onAnswer(DeliveryStore.Claimed recipient, DeliveryResult result, Instant expiresAt,
                          ProviderBreakers.Answer kind, Instant openUntil, boolean prioritized) {
        switch (result) {
            case DeliveryResult.Accepted a -> {
                metrics.delivered(priority, recipient.platform(), recipient.handed() != null);
                finish(recipient, new DeliveryStore.Accepted(recipient, a.providerId()),
                        DeliveryMetrics.ACCEPTED, DeliveryMetrics.ACCEPTED);
            }
            case DeliveryResult.Rejected r -> {
                String reason = r.reason().code();
                finish(recipient, new DeliveryStore.Rejected(recipient, reason, r.tokenInvalid(), r.invalidatedAt(),
                        r.invalidatesDevice()),
                        "rejected", reason);
            }
            case DeliveryResult.Failed f -> {
                // a priority send's own 429 (it passed the pause): that recipient backs off on its own, at
                // least its Retry-After or the rate-limit backoff (60 s), the pause left as it was
                Duration retryAfter = prioritized && kind == ProviderBreakers.Answer.RATE_LIMITED && f.retryAfter() == null
                        ? breakers.properties().rateLimitBackoff() : f.retryAfter();
                onFailure(recipient, f.reason().code(), retryAfter, expiresAt, kind != ProviderBreakers.Answer.NONE, openUntil,
                        f.httpStatus());
            }
        }
    }

    /**
     * {@code down}: the failure says the provider is down or limits us, so it is retried until the TTL
     * whatever the attempts, and not before its circuit's {@code openUntil} (null: closed). {@code httpStatus}: the
     * provider's, when known (kept with a retry's attempt).
     */
    private void onFailure(DeliveryStore.Claimed recipient, String reason, java.time.Duration retryAfter, Instant expiresAt,
                           boolean down, Instant openUntil, Integer httpStatus) {
        Instant now = clock.instant();
        RetryBackoff.Decision decision = down ? backoff.whileDown(recipient.attempts(), retryAfter, now, expiresAt)
                : backoff.after(recipient.attempts(), retryAfter, now, expiresAt);
        if (decision instanceof RetryBackoff.Retry retry && openUntil != null && retry.at().isBefore(openUntil)) {
            decision = RetryBackoff.notAfter(spread(openUntil), expiresAt);
        }
        switch (decision) {
            case RetryBackoff.Retry retry -> finish(recipient,
                    new DeliveryStore.Retry(recipient, reason, retry.at(), httpStatus), "retried", reason);
            case RetryBackoff.GiveUp giveUp -> finish(recipient,
                    new DeliveryStore.GaveUp(recipient, reason, giveUp.reason()),
                    giveUp.reason().equals(RetryBackoff.EXPIRED) ? "expired" : "dead_lettered", reason);
        }
    }

    /**
     * Puts {@code recipient} back to {@code pending} without sending it: its circuit is open until
     * {@code until}. Spread over a probe interval after that, so the recipients of a long outage do not
     * all come due at the same instant; expired when that is past its TTL.
     */
    private void defer(DeliveryStore.Claimed recipient, String reason, Instant until, Instant expiresAt) {
        Instant at = spread(until);
        if (expiresAt != null && !at.isBefore(expiresAt)) {
            finish(recipient, new DeliveryStore.GaveUp(recipient, reason, RetryBackoff.EXPIRED), "expired", reason);
        } else {
            finish(recipient, new DeliveryStore.Deferred(recipient, reason, at), "deferred", reason);
        }
    }

    private Instant spread(Instant from) {
        long window = breakers.properties().probeInterval().toMillis();
        return from.plusMillis(java.util.concurrent.ThreadLocalRandom.current().nextLong(window + 1));
    }

    /**
     * Queues {@code outcome} for the recorder and frees the recipient's budget slot. Its window slot
     * stays taken until the outcome is recorded ({@link #recorded}): when recording falls behind,
     * sending slows down with it instead of running ahead of the lease (a recipient whose lease ran out
     * unrecorded is claimed and sent again), and the recorder's queue never holds more than the
     * lane's windows. Runs on Netty I/O threads: never blocks.
     */
    private void finish(DeliveryStore.Claimed recipient, DeliveryStore.Outcome outcome, String kind, String reasonCode) {
        metrics.outcome(priority, recipient.platform(), kind, reasonCode);
        recorder.add(outcome);
        budgets.get(recipient.platform()).release();
        freed(recipient.platform());
    }

    /** Wakes the claimer if it waits for {@code platform}'s budget or window and enough is free now. */
    private void freed(Platform platform) {
        claimer.freed(platform);
    }

    /** The outcomes of {@code batch} are recorded (or given up at shutdown): their window slots are free again. Recorder thread. */
    private void recorded(List<DeliveryStore.Outcome> batch) {
        int[] n = new int[Platform.values().length];
        for (DeliveryStore.Outcome o : batch) n[o.recipient().platform().ordinal()]++;
        for (Platform p : Platform.values()) {
            if (n[p.ordinal()] == 0) continue;
            windows.get(p).release(n[p.ordinal()]);
            freed(p);
        }
    }
}
