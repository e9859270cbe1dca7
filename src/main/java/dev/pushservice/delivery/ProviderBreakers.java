package dev.pushservice.delivery;

import dev.pushservice.platform.health.ProviderCircuits;
import dev.pushservice.platform.rules.Platform;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

/**
 * A circuit breaker per provider circuit: an app's credential on one platform ({@link Circuit}; for
 * Web Push also the push service's origin, since each origin is a provider of its own). Shared by every
 * lane of the instance.
 *
 * <p>States: <b>closed</b> (sends go out); <b>open</b> after {@link BreakerProperties#failureThreshold()}
 * consecutive outage failures (connection failed, timeout, 5xx, no access token) or at once after a
 * 429: sends wait until {@code retryAt}; then one send goes out as the <b>probe</b> while the others
 * still wait. A probe that fails opens the circuit again for twice as long (from
 * {@link BreakerProperties#probeInterval()} up to {@link BreakerProperties#maxProbeInterval()}); any
 * answer of the provider other than an outage failure (accepted, or a rejection: the provider is up)
 * closes it. A 429 pauses the circuit for its {@code Retry-After}, or without one for
 * {@link BreakerProperties#rateLimitBackoff()} (60 s by default), doubling while 429s follow each other:
 * the provider limits the project (FCM) or the credential (APNs), not one device. Until that pause ends,
 * an accepted answer does not close the circuit: it answers a request sent before the 429 (one of the
 * in-flight window), says nothing about the quota now, and closing on it let a large send go on at full
 * rate into a storm of 429s (drills/provider-storm.sh).
 *
 * <p>Priority sends: the pause is there to stop the bulk traffic that spent the quota, and once it has
 * stopped a trickle is what the quota still admits. So a circuit paused by a 429, and not open for an
 * outage, lets transactional recipients through at {@link BreakerProperties#priorityRate()} a second (a
 * token bucket holding a second's worth, full when the pause starts): the transactional lane's claimer
 * {@link #reserve reserves} them for the paused app's recipients it claims, and {@link #admit} with
 * {@code priority} lets out a reserved or a free one ({@link Send#priority()}), else says to wait for
 * the next free one. A 429 answering such a send leaves the pause as it was (the recipient backs off on
 * its own); their outage failures, or the others', that reach {@link BreakerProperties#failureThreshold()}
 * mark the circuit open for an outage, and only probes go out until the provider answers again.
 *
 * <p>What a lane does with it ({@link Lane}): its claimer asks {@link #paused} which apps' whole-app
 * circuits of a platform are open (providers without origins: APNs, FCM) and claims none of their
 * recipients, so they wait {@code pending}, their rows untouched and no lease taken, for as long as the
 * circuit stays open; when a probe is due it claims one recipient of that app for it. Before handing a
 * message to its provider a sender asks {@link #admit}; a recipient that must wait anyway (a Web Push
 * origin's circuit, which a claim cannot filter; one handed over by a fan-out page; one claimed just
 * before its circuit opened) goes back to {@code pending} until {@code retryAt} with its attempt given
 * back ({@link DeliveryStore.Deferred}), so an outage of any length costs a recipient no attempt and
 * nothing is dead-lettered for it. Every answer is reported to {@link #answered}; a circuit that closes
 * calls the {@link #onClosed} listeners (the lanes claim its waiting recipients at once).
 *
 * <p>Threads: {@link #admit} runs on the lanes' sender threads, {@link #paused}, {@link #reserve} and
 * {@link #unreserve} on their claimer threads,
 * {@link #answered} (and so the {@link #onClosed} listeners) on Netty I/O threads, {@link #notClosed} on
 * request threads. State is kept only for circuits that are failing or open (a
 * healthy provider costs one hash lookup per send); each circuit's state is changed under its own
 * monitor, held for a few field writes: nothing here waits on I/O, a lock of another class or a clock.
 */
@Component
public final class ProviderBreakers implements ProviderCircuits {

    /** What keys a breaker: the app (its credential for the platform), the platform, and a scope such as a Web Push origin. */
    public record Circuit(UUID appId, Platform platform, String scope) {
        public Circuit {
            scope = scope == null ? "" : scope;
        }
    }

    /** Whether a message may go out now. */
    public sealed interface Admission {
    }

    /**
     * Send it; {@code probe}: it is the one request that tests an open circuit; {@code priority}: a
     * transactional send let through a 429's pause at {@link BreakerProperties#priorityRate()} (its own 429
     * neither extends nor doubles the pause: {@link #answered(Circuit, boolean, boolean, Answer, String, Duration, Instant)}).
     */
    public record Send(boolean probe, boolean priority) implements Admission {
        public Send(boolean probe) {
            this(probe, false);
        }
    }

    /** Do not send: the circuit is open ({@code reason}) until {@code until}. */
    public record Wait(Instant until, String reason) implements Admission {
    }

    /**
     * Apps whose whole-app circuit of a platform is open: {@code waiting}, not to be claimed; {@code probeDue},
     * open with its probe due and not let out yet: one recipient may be claimed for it; {@code priorityDue}
     * (asked for the transactional lane only), paused by a 429 with priority sends free now: as many
     * recipients as {@link #reserve} grants may be claimed.
     */
    public record Paused(Set<UUID> waiting, Set<UUID> probeDue, Set<UUID> priorityDue) {
        public static final Paused NONE = new Paused(Set.of(), Set.of(), Set.of());

        public Paused(Set<UUID> waiting, Set<UUID> probeDue) {
            this(waiting, probeDue, Set.of());
        }

        /** Whether no app is paused. */
        public boolean none() {
            return waiting.isEmpty() && probeDue.isEmpty() && priorityDue.isEmpty();
        }

        /** Every app a claim must leave out but for probes and priority sends: all three sets. */
        public Set<UUID> all() {
            if (probeDue.isEmpty() && priorityDue.isEmpty()) return waiting;
            Set<UUID> all = new HashSet<>(waiting);
            all.addAll(probeDue);
            all.addAll(priorityDue);
            return all;
        }
    }

    private static final Send SEND = new Send(false, false);
    private static final Send PROBE = new Send(true, false);
    private static final Send PRIORITY = new Send(false, true);

    private final BreakerProperties properties;
    private final ConcurrentHashMap<Circuit, State> circuits = new ConcurrentHashMap<>();
    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final List<Runnable> closedListeners = new CopyOnWriteArrayList<>();

    /** The instance's breakers, with their meters where there is a registry. */
    @Autowired
    ProviderBreakers(BreakerProperties properties, ObjectProvider<MeterRegistry> registry) {
        this(properties, registry.getIfAvailable());
    }

    /** @param registry where the meters go; null: none */
    public ProviderBreakers(BreakerProperties properties, MeterRegistry registry) {
        this.properties = properties;
        this.registry = registry;
        if (registry != null) {
            for (Platform p : Platform.values()) {
                Gauge.builder("push_provider_circuits_open", this, b -> b.countNotClosed(p))
                        .description("Provider circuits (app credential, platform, Web Push origin) whose sends are paused")
                        .tag("platform", p.value()).register(registry);
            }
        }
    }

    public BreakerProperties properties() {
        return properties;
    }

    /**
     * {@code listener} runs each time an open circuit closes, on the thread that reported the answer (a
     * Netty I/O thread): it must be cheap and never block.
     */
    public void onClosed(Runnable listener) {
        closedListeners.add(listener);
    }

    /**
     * The apps whose circuit of {@code platform} without a scope (the whole app's credential: every
     * recipient of the app on a platform whose provider has no origins) is open at {@code now}. Cheap:
     * only failing or open circuits are kept. Never blocks.
     */
    public Paused paused(Platform platform, Instant now) {
        return paused(platform, now, false);
    }

    /**
     * As {@link #paused(Platform, Instant)}; {@code priority}: asked for the transactional lane, whose
     * recipients a circuit paused by a 429 (not one open for an outage) still lets out at
     * {@link BreakerProperties#priorityRate()}: such an app is in {@code priorityDue} while a send is free.
     */
    public Paused paused(Platform platform, Instant now, boolean priority) {
        if (circuits.isEmpty()) return Paused.NONE;
        Set<UUID> waiting = null;
        Set<UUID> probeDue = null;
        Set<UUID> priorityDue = null;
        for (Map.Entry<Circuit, State> e : circuits.entrySet()) {
            Circuit c = e.getKey();
            if (c.platform() != platform || !c.scope().isEmpty()) continue;
            State s = e.getValue();
            boolean due;
            boolean free = false;
            synchronized (s) {
                if (s.retryAt == null) continue;
                due = !s.probing && !now.isBefore(s.retryAt);
                if (!due && priority && priorityOpen(s)) free = refill(s, now) >= 1;
            }
            if (due) {
                if (probeDue == null) probeDue = new HashSet<>();
                probeDue.add(c.appId());
            } else if (free) {
                if (priorityDue == null) priorityDue = new HashSet<>();
                priorityDue.add(c.appId());
            } else {
                if (waiting == null) waiting = new HashSet<>();
                waiting.add(c.appId());
            }
        }
        if (waiting == null && probeDue == null && priorityDue == null) return Paused.NONE;
        return new Paused(waiting == null ? Set.of() : waiting, probeDue == null ? Set.of() : probeDue,
                priorityDue == null ? Set.of() : priorityDue);
    }

    /**
     * Takes up to {@code max} of {@code circuit}'s free priority sends for recipients a transactional
     * claim is about to take (each later let out by {@link #admit} without taking another); returns how
     * many. The claim gives back what it did not use ({@link #unreserve}). 0 unless a 429 pauses the circuit.
     */
    public int reserve(Circuit circuit, int max, Instant now) {
        State s = circuits.get(circuit);
        if (s == null || max <= 0) return 0;
        synchronized (s) {
            if (s.retryAt == null || !priorityOpen(s)) return 0;
            int n = (int) Math.min(max, Math.floor(refill(s, now)));
            s.tokens -= n;
            s.reserved += n;
            return n;
        }
    }

    /** Gives back {@code n} priority sends {@link #reserve} took and no claimed recipient used. */
    public void unreserve(Circuit circuit, int n) {
        State s = circuits.get(circuit);
        if (s == null || n <= 0) return;
        synchronized (s) {
            int back = Math.min(n, s.reserved);
            s.reserved -= back;
            s.tokens += back;
        }
    }

    /** Whether a message of {@code circuit} may be sent at {@code now}. Never blocks. */
    public Admission admit(Circuit circuit, Instant now) {
        return admit(circuit, now, false);
    }

    /**
     * As {@link #admit(Circuit, Instant)}; {@code priority}: a transactional recipient, let out while a 429
     * pauses the circuit as long as {@link BreakerProperties#priorityRate()} allows ({@link Send#priority()}),
     * else told to wait for the next free send (not for the pause's end).
     */
    public Admission admit(Circuit circuit, Instant now, boolean priority) {
        State s = circuits.get(circuit);
        if (s == null) return SEND;
        Admission prioritized = null;
        synchronized (s) {
            if (s.retryAt == null) return SEND;
            boolean probeDue = !now.isBefore(s.retryAt) && !s.probing;
            if (!probeDue && priority && priorityOpen(s)) prioritized = admitPriority(s, now);
        }
        if (prioritized != null) {
            if (prioritized == PRIORITY) count("push_provider_circuit_priority_sends_total", circuit.platform(), null);
            return prioritized;
        }
        synchronized (s) {
            if (s.retryAt == null) return SEND;
            if (now.isBefore(s.retryAt)) return new Wait(s.retryAt, s.reason);
            // a probe can take a whole request timeout: what arrives meanwhile waits a quarter of the
            // longest probe interval rather than one probe interval, or a large send would be claimed and
            // put back every second for as long as the probe hangs
            if (s.probing) return new Wait(now.plus(probingWait()), s.reason);
            s.probing = true;
        }
        count("push_provider_circuit_probes_total", circuit.platform(), null);
        return PROBE;
    }

    /** A priority send of a circuit paused by a 429: a reserved or a free send, or a wait for the next one. Under s's monitor. */
    private Admission admitPriority(State s, Instant now) {
        if (s.reserved > 0) {
            s.reserved--;
            return PRIORITY;
        }
        double free = refill(s, now);
        if (free >= 1) {
            s.tokens -= 1;
            return PRIORITY;
        }
        long micros = (long) Math.ceil((1 - free) * 1_000_000 / properties.priorityRate());
        return new Wait(now.plus(Duration.ofNanos(Math.max(1, micros) * 1_000)), s.reason);
    }

    /** Whether {@code s} (open) lets priority sends through: paused by a 429, not open for an outage. Under s's monitor. */
    private boolean priorityOpen(State s) {
        return !s.outage && s.rateLimitedUntil != null && properties.priorityRate() > 0;
    }

    /**
     * Refills {@code s}'s priority sends up to one second's worth (reserved ones included) for the time
     * since the last refill; returns the free ones (a fraction while the next is not whole yet). Under s's monitor.
     */
    private double refill(State s, Instant now) {
        int rate = properties.priorityRate();
        if (s.tokensAt != null && now.isAfter(s.tokensAt)) {
            double seconds = Duration.between(s.tokensAt, now).toNanos() / 1e9;
            s.tokens = Math.min(rate - s.reserved, s.tokens + seconds * rate);
        }
        if (s.tokensAt == null || now.isAfter(s.tokensAt)) s.tokensAt = now;
        return s.tokens;
    }

    /** What an answer says about the provider. */
    public enum Answer {
        /** Accepted, or rejected for a reason of the message, the token or the credentials: the provider is up. */
        UP,
        /** Connection failed, timed out, 5xx, no access token. */
        OUTAGE,
        /** 429. */
        RATE_LIMITED,
        /** Says nothing about the provider (our own failure). */
        NONE
    }

    /** How an answer counts. */
    public static Answer classify(DeliveryResult result) {
        return switch (result) {
            case DeliveryResult.Accepted a -> Answer.UP;
            case DeliveryResult.Rejected r -> Answer.UP;
            case DeliveryResult.Failed f -> switch (f.reason()) {
                case RATE_LIMITED -> Answer.RATE_LIMITED;
                case PROVIDER_UNAVAILABLE, TIMEOUT, CONNECTION_FAILED, ACCESS_TOKEN_UNAVAILABLE -> Answer.OUTAGE;
                default -> Answer.NONE;
            };
        };
    }

    /**
     * Reports an answer of {@code circuit}'s provider ({@code probe}: to the probe {@link #admit} let
     * out). Returns until when the circuit is open after it, or null while it is closed. Never blocks.
     */
    public Instant answered(Circuit circuit, boolean probe, Answer answer, String reason, Duration retryAfter, Instant now) {
        return answered(circuit, probe, false, answer, reason, retryAfter, now);
    }

    /**
     * As {@link #answered(Circuit, boolean, Answer, String, Duration, Instant)}; {@code priority}: the answer
     * to a send {@link #admit} let through a 429's pause ({@link Send#priority()}). Its 429 changes nothing of
     * the circuit (the bulk's 429s set the pause; the recipient backs off on its own), and null is returned:
     * the recipient is not held until the pause's end. Its outage failures count as any other's; once they
     * open the circuit for an outage, that is returned and priority sends stop.
     */
    public Instant answered(Circuit circuit, boolean probe, boolean priority, Answer answer, String reason, Duration retryAfter,
                            Instant now) {
        if (priority && !probe && (answer == Answer.RATE_LIMITED || answer == Answer.OUTAGE)) {
            State s = circuits.get(circuit);
            if (s != null) {
                synchronized (s) {
                    if (s.retryAt != null) {
                        if (answer == Answer.RATE_LIMITED) return null;
                        s.failures++;
                        if (s.failures >= properties.failureThreshold()) s.outage = true;
                        return s.outage ? s.retryAt : null;
                    }
                }
            }
        }
        switch (answer) {
            case NONE -> {
                if (probe) release(circuit);
                return retryAt(circuit);
            }
            case UP -> {
                State s = circuits.get(circuit);
                boolean closed = false;
                if (s != null) {
                    synchronized (s) {
                        if (s.rateLimitedUntil != null && now.isBefore(s.rateLimitedUntil)) {
                            // the provider answers: consecutive outage failures start again, and it is not down
                            s.failures = 0;
                            s.outage = false;
                            return s.retryAt;
                        }
                        circuits.remove(circuit, s);
                        closed = s.retryAt != null;
                        s.retryAt = null;
                        s.probing = false;
                    }
                }
                if (closed) closedListeners.forEach(Runnable::run);
                return null;
            }
            default -> {
            }
        }
        State s = circuits.computeIfAbsent(circuit, c -> new State());
        boolean opened = false;
        Instant until;
        synchronized (s) {
            if (answer == Answer.RATE_LIMITED) {
                // the 429s of one burst (every request in flight when the quota ran out) pause once; a 429
                // after the pause (the probe's, or a straggler's) doubles it
                boolean paused = s.retryAt != null && now.isBefore(s.retryAt);
                if (!paused) s.rateLimited++;
                Duration pause = retryAfter != null ? retryAfter : doubled(properties.rateLimitBackoff(), s.rateLimited,
                        max(properties.rateLimitBackoff(), properties.maxProbeInterval()).multipliedBy(16));
                if (probe) s.probing = false;
                s.outage = false; // a 429 is an answer: the provider is up
                Instant end = now.plus(pause);
                if (s.rateLimitedUntil == null || end.isAfter(s.rateLimitedUntil)) s.rateLimitedUntil = end;
                if (s.retryAt == null) {
                    opened = true;
                    s.openedAt = now;
                    s.retryAt = end;
                    // the bulk that spent the quota has stopped: a second's worth of priority sends may go at once
                    s.tokens = properties.priorityRate();
                    s.reserved = 0;
                    s.tokensAt = now;
                } else if (end.isAfter(s.retryAt)) {
                    s.retryAt = end;
                }
                s.reason = reason;
            } else {
                s.failures++;
                if (probe) {
                    s.probing = false;
                    s.probeFailures++;
                    s.outage = true;
                    s.retryAt = now.plus(doubled(properties.probeInterval(), s.probeFailures + 1, properties.maxProbeInterval()));
                } else if (s.retryAt == null && s.failures >= properties.failureThreshold()) {
                    opened = true;
                    s.outage = true;
                    s.openedAt = now;
                    s.reason = reason;
                    s.retryAt = now.plus(properties.probeInterval());
                } else if (s.failures >= properties.failureThreshold()) {
                    s.outage = true; // paused by a 429 and now failing as well: only probes go out
                }
            }
            until = s.retryAt;
        }
        if (opened) count("push_provider_circuit_opened_total", circuit.platform(), reason);
        return until;
    }

    private Duration probingWait() {
        Duration quarter = properties.maxProbeInterval().dividedBy(4);
        return quarter.compareTo(properties.probeInterval()) > 0 ? quarter : properties.probeInterval();
    }

    /** Until when {@code circuit} is open, or null while it is closed. */
    public Instant retryAt(Circuit circuit) {
        State s = circuits.get(circuit);
        if (s == null) return null;
        synchronized (s) {
            return s.retryAt;
        }
    }

    private void release(Circuit circuit) {
        State s = circuits.get(circuit);
        if (s == null) return;
        synchronized (s) {
            s.probing = false;
        }
    }

    @Override
    public List<ProviderCircuits.Circuit> notClosed() {
        List<ProviderCircuits.Circuit> open = new ArrayList<>();
        circuits.forEach((c, s) -> {
            synchronized (s) {
                if (s.retryAt != null) {
                    open.add(new ProviderCircuits.Circuit(c.appId().toString(), c.platform().value(), c.scope(),
                            s.probing ? "probing" : "open", s.reason, s.openedAt, s.retryAt));
                }
            }
        });
        open.sort(Comparator.comparing(ProviderCircuits.Circuit::openedAt));
        return open;
    }

    /** Circuits of {@code platform} that are not closed (the gauge). */
    int countNotClosed(Platform platform) {
        int n = 0;
        for (Map.Entry<Circuit, State> e : circuits.entrySet()) {
            if (e.getKey().platform() != platform) continue;
            synchronized (e.getValue()) {
                if (e.getValue().retryAt != null) n++;
            }
        }
        return n;
    }

    private void count(String name, Platform platform, String reason) {
        if (registry == null) return;
        String key = name + "|" + platform.value() + "|" + reason;
        counters.computeIfAbsent(key, k -> {
            Counter.Builder b = Counter.builder(name).tag("platform", platform.value());
            if (reason != null) b.tag("reason", reason);
            return b.register(registry);
        }).increment();
    }

    private static Duration doubled(Duration initial, int times, Duration cap) {
        Duration d = initial;
        for (int i = 1; i < times && d.compareTo(cap) < 0; i++) d = d.multipliedBy(2);
        return d.compareTo(cap) > 0 ? cap : d;
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    /** One circuit's state; fields guarded by the object's monitor. */
    private static final class State {
        int failures;
        int probeFailures;
        int rateLimited;
        boolean probing;
        Instant retryAt;
        /** The end of the latest 429's pause: before it, no accepted answer closes the circuit. */
        Instant rateLimitedUntil;
        /** Open for an outage (failures, a failed probe), not only paused by a 429: no priority sends. */
        boolean outage;
        /** Priority sends free now (a fraction while the next is not whole), refilled at the priority rate up to one second's worth. */
        double tokens;
        /** Priority sends a transactional claim took for its recipients ({@link #reserve}), not let out yet. */
        int reserved;
        /** When {@link #tokens} was last refilled. */
        Instant tokensAt;
        Instant openedAt;
        String reason;
    }
}
