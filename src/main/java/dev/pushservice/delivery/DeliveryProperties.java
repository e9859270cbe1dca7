package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Delivery engine settings ({@code push.delivery.*}, README "Configuration").
 *
 * @param chunkSize recipients claimed (and results recorded) per statement ({@code PUSH_DELIVERY_CHUNK_SIZE}, default 500)
 * @param pollInterval how often an idle lane looks for due work it was not told about: retries coming due,
 *                     work handed to another instance, work left by a crash ({@code PUSH_DELIVERY_POLL_INTERVAL}, 1s)
 * @param lease how long a claimed recipient belongs to the instance that claimed it; a recipient still
 *              claimed after that (its instance died) is claimed again ({@code PUSH_DELIVERY_LEASE}, 2m;
 *              must exceed the providers' request timeouts)
 * @param maxAttempts sends per recipient at most, the first one included ({@code PUSH_DELIVERY_MAX_ATTEMPTS}, 8)
 * @param initialBackoff ceiling of the wait after the first transient failure ({@code PUSH_DELIVERY_INITIAL_BACKOFF}, 1s)
 * @param maxBackoff ceiling of any wait between two attempts ({@code PUSH_DELIVERY_MAX_BACKOFF}, 5m)
 * @param senderThreads threads per lane that render and hand messages to providers ({@code PUSH_DELIVERY_SENDER_THREADS}, 2)
 * @param lanes per lane: messages handed to a provider and not yet answered, per platform
 * @param handoff whether a fan-out hands the recipients its instance's lane has room for straight to
 *                that lane, listed in a leased handover row and without a recipient row until their
 *                outcome is recorded, instead of inserting every recipient {@code pending} for a claim
 *                ({@code PUSH_DELIVERY_HANDOFF}, true; see {@link Handover})
 */
@ConfigurationProperties(prefix = "push.delivery")
public record DeliveryProperties(
        int chunkSize,
        Duration pollInterval,
        Duration lease,
        int maxAttempts,
        Duration initialBackoff,
        Duration maxBackoff,
        int senderThreads,
        Map<Priority, Lane> lanes,
        Boolean handoff) {

    /** Default in-flight budgets per platform: they sum to 900, below every provider's default of 1,000. */
    static final Map<Priority, Integer> DEFAULT_IN_FLIGHT = Map.of(
            Priority.TRANSACTIONAL, 100, Priority.HIGH, 100, Priority.NORMAL, 300, Priority.BULK, 400);

    public DeliveryProperties {
        if (chunkSize <= 0) chunkSize = 500;
        if (pollInterval == null || !pollInterval.isPositive()) pollInterval = Duration.ofSeconds(1);
        if (lease == null || !lease.isPositive()) lease = Duration.ofMinutes(2);
        if (maxAttempts <= 0) maxAttempts = 8;
        if (initialBackoff == null || !initialBackoff.isPositive()) initialBackoff = Duration.ofSeconds(1);
        if (maxBackoff == null || maxBackoff.compareTo(initialBackoff) < 0) {
            maxBackoff = initialBackoff.compareTo(Duration.ofMinutes(5)) > 0 ? initialBackoff : Duration.ofMinutes(5);
        }
        if (senderThreads <= 0) senderThreads = 2;
        Map<Priority, Lane> complete = new EnumMap<>(Priority.class);
        for (Priority p : Priority.values()) {
            Lane lane = lanes == null ? null : lanes.get(p);
            complete.put(p, lane == null || lane.inFlight() <= 0 ? new Lane(DEFAULT_IN_FLIGHT.get(p)) : lane);
        }
        lanes = Map.copyOf(complete);
        if (handoff == null) handoff = Boolean.TRUE;
    }

    /** Defaults everywhere (tests and tools). */
    public static DeliveryProperties defaults() {
        return new DeliveryProperties(0, null, null, 0, null, null, 0, null, null);
    }

    public RetryBackoff backoff() {
        return new RetryBackoff(maxAttempts, initialBackoff, maxBackoff);
    }

    /** @param inFlight messages of this lane handed to one platform's provider and not yet answered */
    public record Lane(int inFlight) {
    }
}
