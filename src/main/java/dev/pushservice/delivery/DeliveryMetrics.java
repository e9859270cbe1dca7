package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.Platform;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The delivery engine's meters, per provider ({@code platform}) and lane; Prometheus names:
 * <ul>
 *   <li>{@code push_delivery_sends_total}: messages handed to a provider;</li>
 *   <li>{@code push_delivery_outcomes_total}, tagged {@code outcome} (accepted, rejected, retried,
 *       dead_lettered, expired, cancelled; skipped for claimed recipients the store ended unsent, such
 *       as over a frequency cap) and {@code reason} (the provider's reason code, bounded; the store's
 *       rule for skipped);</li>
 *   <li>{@code push_delivery_provider_latency_seconds}: hand-over to answer;</li>
 *   <li>{@code push_delivery_in_flight}: handed over and not yet answered;</li>
 *   <li>{@code push_delivery_handed_over_total}: recipients a fan-out page gave straight to its
 *       instance's lane, with no claim ({@link Handover}), and {@code push_delivery_handed_waiting}:
 *       those of them not yet handed to a provider;</li>
 *   <li>{@code push_delivery_delivered_total}, tagged {@code via} ({@code handed}: a fan-out page of this
 *       instance handed it to the lane; {@code claimed}: the lane claimed it from the table): recipients
 *       this instance sent and the provider accepted. Each instance counts its own, so the series of
 *       the worker instances give each one's share of a send (bench/spread.sh);</li>
 *   <li>{@code push_delivery_queue_depth} and {@code push_delivery_queue_oldest_age_seconds}: due
 *       recipients not yet claimed, per lane (read every few seconds).</li>
 * </ul>
 * Counters are looked up once per tag combination and cached, and the one outcome nearly every
 * recipient has (accepted) is registered up front per lane and provider, so recording it is two
 * {@link EnumMap} reads (a profile of a 100,000-recipient fan-out showed the keyed lookup, its
 * allocation and string comparisons, at ~2.5% of the service's CPU). Safe on Netty I/O threads (no
 * locks held, nothing waits). Thread-safe.
 */
final class DeliveryMetrics {

    private final MeterRegistry registry;
    private final Map<Key, Counter> outcomes = new ConcurrentHashMap<>();
    private final Map<Priority, Map<Platform, Counter>> sends = new EnumMap<>(Priority.class);
    private final Map<Priority, Map<Platform, Timer>> latency = new EnumMap<>(Priority.class);
    private final Map<Priority, Map<Platform, Counter>> accepted = new EnumMap<>(Priority.class);
    private final Map<Priority, Map<Platform, Counter>> handedOver = new EnumMap<>(Priority.class);
    private final Map<Priority, Map<Platform, Counter>> deliveredHanded = new EnumMap<>(Priority.class);
    private final Map<Priority, Map<Platform, Counter>> deliveredClaimed = new EnumMap<>(Priority.class);

    /** The outcome (and its reason) of a send the provider acknowledged. */
    static final String ACCEPTED = "accepted";
    /** The outcome of a claimed recipient never handed over: its notification was cancelled (as {@link Lane} counts it). */
    static final String CANCELLED = "cancelled";
    /** The outcome of claimed recipients the store ended unsent by a rule of its own (its reason). */
    static final String SKIPPED = "skipped";

    private record Key(Priority lane, Platform platform, String outcome, String reason) {
    }

    DeliveryMetrics(MeterRegistry registry) {
        this.registry = registry;
        for (Priority lane : Priority.values()) {
            Map<Platform, Counter> s = new EnumMap<>(Platform.class);
            Map<Platform, Timer> t = new EnumMap<>(Platform.class);
            for (Platform platform : Platform.values()) {
                s.put(platform, Counter.builder("push.delivery.sends")
                        .description("Messages handed to a provider")
                        .tags("lane", lane.value(), "platform", platform.value()).register(registry));
                t.put(platform, Timer.builder("push.delivery.provider.latency")
                        .description("From hand-over to the provider's answer")
                        .tags("lane", lane.value(), "platform", platform.value())
                        .publishPercentileHistogram().register(registry));
            }
            sends.put(lane, s);
            latency.put(lane, t);
            Map<Platform, Counter> h = new EnumMap<>(Platform.class);
            for (Platform platform : Platform.values()) {
                h.put(platform, Counter.builder("push.delivery.handed.over")
                        .description("Recipients a fan-out gave straight to its instance's lane, with no claim")
                        .tags("lane", lane.value(), "platform", platform.value()).register(registry));
            }
            handedOver.put(lane, h);
            deliveredHanded.put(lane, delivered(lane, "handed"));
            deliveredClaimed.put(lane, delivered(lane, "claimed"));
            Map<Platform, Counter> a = new EnumMap<>(Platform.class);
            for (Platform platform : Platform.values()) {
                a.put(platform, outcomeCounter(new Key(lane, platform, ACCEPTED, ACCEPTED)));
            }
            accepted.put(lane, a);
        }
    }

    private Map<Platform, Counter> delivered(Priority lane, String via) {
        Map<Platform, Counter> counters = new EnumMap<>(Platform.class);
        for (Platform platform : Platform.values()) {
            counters.put(platform, Counter.builder("push.delivery.delivered")
                    .description("Recipients this instance sent and the provider accepted, by how they reached its lane")
                    .tags("lane", lane.value(), "platform", platform.value(), "via", via).register(registry));
        }
        return counters;
    }

    /** A recipient this instance sent was accepted; {@code handed}: it came by a fan-out's hand-over, not a claim. */
    void delivered(Priority lane, Platform platform, boolean handed) {
        (handed ? deliveredHanded : deliveredClaimed).get(lane).get(platform).increment();
    }

    void inFlight(Priority lane, Platform platform, Semaphore budget, int capacity) {
        Gauge.builder("push.delivery.in.flight", budget, b -> capacity - b.availablePermits())
                .description("Messages handed to a provider and not yet answered")
                .tags("lane", lane.value(), "platform", platform.value()).register(registry);
    }

    void handedWaiting(Priority lane, Platform platform, AtomicInteger waiting) {
        Gauge.builder("push.delivery.handed.waiting", waiting, AtomicInteger::get)
                .description("Recipients handed straight to the lane and not yet to a provider")
                .tags("lane", lane.value(), "platform", platform.value()).register(registry);
    }

    void handedOver(Priority lane, Platform platform, int count) {
        handedOver.get(lane).get(platform).increment(count);
    }

    void queue(Priority lane, LaneStats stats) {
        Gauge.builder("push.delivery.queue.depth", stats, s -> s.depth)
                .description("Recipients due and not yet claimed")
                .tags("lane", lane.value()).register(registry);
        Gauge.builder("push.delivery.queue.oldest.age", stats, s -> s.oldestAgeSeconds)
                .description("How long the oldest due, unclaimed recipient has waited")
                .baseUnit("seconds").tags("lane", lane.value()).register(registry);
    }

    void sent(Priority lane, Platform platform) {
        sends.get(lane).get(platform).increment();
    }

    void answered(Priority lane, Platform platform, long nanos) {
        latency.get(lane).get(platform).record(nanos, TimeUnit.NANOSECONDS);
    }

    void outcome(Priority lane, Platform platform, String outcome, String reason) {
        if (ACCEPTED.equals(outcome) && ACCEPTED.equals(reason)) {
            accepted.get(lane).get(platform).increment();
            return;
        }
        outcomes.computeIfAbsent(new Key(lane, platform, outcome, reason), this::outcomeCounter).increment(1);
    }

    /** {@code count} recipients at once with the same outcome (a claim's skipped recipients): one increment. */
    void outcomes(Priority lane, Platform platform, String outcome, String reason, int count) {
        if (count <= 0) return;
        outcomes.computeIfAbsent(new Key(lane, platform, outcome, reason), this::outcomeCounter).increment(count);
    }

    private Counter outcomeCounter(Key k) {
        return Counter.builder("push.delivery.outcomes")
                .description("What became of each recipient's send")
                .tags("lane", k.lane.value(), "platform", k.platform.value(), "outcome", k.outcome, "reason", k.reason)
                .register(registry);
    }

    /** The last queue reading of a lane (written by its claimer, read by the gauges). */
    static final class LaneStats {
        volatile double depth;
        volatile double oldestAgeSeconds;
    }
}
