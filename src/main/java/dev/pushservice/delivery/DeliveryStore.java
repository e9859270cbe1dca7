package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Priority;
import dev.pushservice.platform.rules.Platform;
import dev.pushservice.templates.Renderer;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/**
 * The durable side of delivery, as the {@link DeliveryEngine} sees it: the feature that owns
 * notifications and their recipients implements it over its tables. Every method is one short
 * transaction on the delivery pool ({@link dev.pushservice.platform.db.DeliveryDatabase}), called from the engine's lane threads
 * (never from a Netty I/O thread), and set-based: one statement per chunk, never one per recipient.
 *
 * <p>Recipient states as the engine drives them: {@code pending} (due at its next attempt time) →
 * claimed ({@code sending}, leased until {@code now + lease}) → {@code accepted},
 * {@code invalid_token} (the device is invalidated), {@code failed} (a permanent rejection, or
 * transient failures other than an outage until the maximum attempts: then also dead-lettered),
 * {@code expired} (the TTL ran out before a retry; an outage is retried until then), {@code cancelled} (never handed over), or back to {@code pending} with a
 * later attempt time after a transient failure. A claim whose lease ran out (its instance died before
 * recording a result) is claimed again: only those recipients can receive a notification twice.
 * A recipient may also start out claimed without a row: a fan-out page that hands it straight to its
 * instance's lane ({@link Handover}) lists it in a leased handover, its attempt counted; recording
 * inserts its row with its outcome ({@link Claimed#handed()}). If the lease ends before that, the
 * claim gives it a {@code pending} row and it goes on exactly like a claimed one.
 */
public interface DeliveryStore {

    /**
     * Claims up to {@code limit} recipients of {@code lane} and {@code platform} that are due at
     * {@code now} (pending, or claimed with an expired lease), oldest first, with
     * {@code FOR UPDATE SKIP LOCKED}: marks them claimed until {@code now + lease}, counts the attempt,
     * and returns what rendering needs. Recipients of notifications that are not being delivered
     * (cancelled, terminal) are never claimed. A due recipient whose device was disabled or
     * invalidated since the fan-out is made {@code failed} by the same statement and returned with
     * {@link Claimed#unsendable()} set.
     */
    default List<Claimed> claim(Priority lane, Platform platform, int limit, Instant now, Duration lease) {
        return claim(lane, platform, limit, now, lease, Apps.ALL);
    }

    /**
     * As {@link #claim(Priority, Platform, int, Instant, Duration)}, of the recipients of {@code apps}
     * only: a lane leaves out the apps whose provider circuit is open ({@link ProviderBreakers#paused}),
     * whose recipients then stay {@code pending} and untouched, and claims one recipient of such an app
     * when its probe is due.
     */
    List<Claimed> claim(Priority lane, Platform platform, int limit, Instant now, Duration lease, Apps apps);

    /**
     * Leases whole handovers that a fan-out page left unleased for any worker (the part of the page its
     * own lane did not take), of {@code lane} and {@code platform}, of the apps {@code apps} lets through,
     * holding at most {@code room} recipients together: leased to this instance until {@code now + lease},
     * their recipients are returned as handed ({@link Claimed#handed()}: their first attempt counted, each
     * recorded with its outcome as a fan-out's own hand-over is), for the lane's hand-over queue. A recipient
     * whose device went away since the fan-out is made {@code failed} by the same statement and returned
     * with {@link Claimed#unsendable()} set, not handed. Empty when nothing is unleased (a store without
     * handovers has none).
     */
    default List<Claimed> leaseHandovers(Priority lane, Platform platform, int room, Instant now, Duration lease, Apps apps) {
        return List.of();
    }

    /**
     * Which apps' recipients a claim may take: all but {@code except}, and when {@code only} is not null,
     * that app's alone.
     */
    record Apps(Set<UUID> except, UUID only) {
        public static final Apps ALL = new Apps(Set.of(), null);

        public Apps {
            except = Set.copyOf(except);
        }

        public static Apps except(Set<UUID> apps) {
            return apps.isEmpty() ? ALL : new Apps(apps, null);
        }

        public static Apps only(UUID app) {
            return new Apps(Set.of(), app);
        }

        public boolean includes(UUID app) {
            return (only == null || only.equals(app)) && !except.contains(app);
        }
    }

    /** What every recipient of a notification is sent, or empty when the notification is gone. */
    Optional<Blueprint> blueprint(UUID appId, UUID notificationId);

    /**
     * Records {@code outcomes} in one transaction, one statement per kind of outcome: recipient
     * states, dead letters, for a {@link Outcome.Rejected} with {@link DeliveryReasons#CREDENTIALS_MISSING}
     * every other pending recipient of that notification and platform, and with
     * {@link DeliveryReasons#CREDENTIALS_INVALID} every pending recipient of that app and platform. A
     * {@link Deferred} gives back the attempt its claim counted. Idempotent per attempt: the same
     * outcomes recorded again (after a failure whose commit went through) write, count and dead-letter
     * nothing twice, and never touch a recipient claimed since for a later attempt. After the commit,
     * invalidates the devices whose provider declared their token dead (through the devices feature)
     * and moves every notification whose recipients are now all terminal to its terminal state (with
     * its lifecycle fact and its log line, in the owner's transaction); a failure of those steps does
     * not make this method throw (they are retried, or reconciled, on their own). Throws only when the
     * recording itself may not have committed: then the caller records the same outcomes again.
     */
    void record(List<Outcome> outcomes, Instant now);

    /**
     * Which of {@code notificationIds} were cancelled: the lanes ask every poll interval about the
     * notifications whose claimed recipients wait for a sender, so a cancel taken by another
     * instance stops what this one has not handed over yet.
     */
    Set<UUID> cancelledAmong(Set<UUID> notificationIds);

    /** How much due work waits in {@code lane} (for metrics; may be approximate for very long queues). */
    QueueStats stats(Priority lane, Instant now);

    /**
     * One claimed recipient.
     *
     * @param attempts sends made including the one about to happen
     * @param values what this recipient's placeholders read
     * @param token the provider token; never logged
     * @param unsendable null, or why the recipient must not be sent ({@link DeliveryReasons#DEVICE_DISABLED},
     *                   {@link DeliveryReasons#DEVICE_INVALIDATED}): the claim already made it
     *                   {@code failed} with that reason; the engine records it as a rejection (which
     *                   changes nothing in the store but finishes its notification) and never sends it
     * @param expiresAt when this recipient's TTL runs out (its own intended time plus the TTL); null:
     *                  the notification's ({@link Blueprint#expiresAt()}), or no TTL
     * @param locales the recipient's locales in preference order (the device's, then its user's; either
     *                may be missing), frozen at fan-out when the notification has localizations, else empty
     * @param handed null for a claimed recipient; for one a fan-out page handed straight to its lane
     *               ({@link Handover}), which handover lists it: it has no row yet, recording inserts it
     * @param claimedAt when this attempt was claimed, or handed over by its fan-out page: shortly before its
     *                  send. A token invalidation without the provider's own time applies only to a device
     *                  registered before it (a device registered again since keeps its token). Null: unknown
     *                  (the recording's time is used)
     */
    record Claimed(UUID notificationId, UUID appId, UUID deviceId, Platform platform,
                   String token, int attempts, Renderer.Values values, String unsendable, Instant expiresAt,
                   List<String> locales, Handed handed, Instant claimedAt) {

        public Claimed {
            locales = locales == null ? List.of() : locales;
        }

        /** A recipient claimed at an unknown time. */
        public Claimed(UUID notificationId, UUID appId, UUID deviceId, Platform platform, String token, int attempts,
                       Renderer.Values values, String unsendable, Instant expiresAt, List<String> locales, Handed handed) {
            this(notificationId, appId, deviceId, platform, token, attempts, values, unsendable, expiresAt, locales, handed,
                    null);
        }

        /** A claimed recipient (its row exists): recording updates it. */
        public Claimed(UUID notificationId, UUID appId, UUID deviceId, Platform platform, String token, int attempts,
                       Renderer.Values values, String unsendable, Instant expiresAt, List<String> locales) {
            this(notificationId, appId, deviceId, platform, token, attempts, values, unsendable, expiresAt, locales, null);
        }

        /** A recipient without locales: it gets the default content. */
        public Claimed(UUID notificationId, UUID appId, UUID deviceId, Platform platform, String token, int attempts,
                       Renderer.Values values, String unsendable, Instant expiresAt) {
            this(notificationId, appId, deviceId, platform, token, attempts, values, unsendable, expiresAt, List.of());
        }

        /** A recipient to send. */
        public Claimed(UUID notificationId, UUID appId, UUID deviceId, Platform platform, String token, int attempts,
                       Renderer.Values values) {
            this(notificationId, appId, deviceId, platform, token, attempts, values, null, null, List.of());
        }

        @Override
        public String toString() {
            return "Claimed[notification=" + notificationId + ", device=" + deviceId
                    + ", platform=" + platform + ", attempts=" + attempts + "]";
        }
    }

    /**
     * A recipient listed by a handover instead of having a row ({@link Handover}).
     *
     * @param handover the handover's id
     * @param userId the device's user when the page read it (null: none); part of the row recording inserts
     */
    record Handed(long handover, UUID userId) {
    }

    /** What became of one claimed recipient. */
    sealed interface Outcome {
        Claimed recipient();
    }

    /** Status names the engine records. */
    final class States {
        public static final String PENDING = "pending";
        public static final String SENDING = "sending";
        public static final String ACCEPTED = "accepted";
        public static final String INVALID_TOKEN = "invalid_token";
        public static final String FAILED = "failed";
        public static final String EXPIRED = "expired";
        public static final String CANCELLED = "cancelled";

        private States() {
        }
    }

    /** The provider acknowledged the push. */
    record Accepted(Claimed recipient, String providerId) implements Outcome {
    }

    /**
     * Permanently refused; {@code tokenInvalid}: the provider says the token is dead (the recipient
     * ends {@code invalid_token}, else {@code failed}); {@code invalidatesDevice}: invalidate the
     * device (always when {@code tokenInvalid}).
     */
    record Rejected(Claimed recipient, String reason, boolean tokenInvalid, Instant invalidatedAt, boolean invalidatesDevice)
            implements Outcome {

        public Rejected {
            invalidatesDevice |= tokenInvalid;
        }

        public Rejected(Claimed recipient, String reason, boolean tokenInvalid, Instant invalidatedAt) {
            this(recipient, reason, tokenInvalid, invalidatedAt, tokenInvalid);
        }
    }

    /**
     * Failed transiently; send again at {@code at}. {@code httpStatus}: the provider's answer's, when it
     * gave one (null: none, or unknown). Its attempt is kept in the recipient's attempt history.
     */
    record Retry(Claimed recipient, String reason, Instant at, Integer httpStatus) implements Outcome {

        public Retry(Claimed recipient, String reason, Instant at) {
            this(recipient, reason, at, null);
        }
    }

    /**
     * Never handed to its provider: the provider's circuit is open ({@link ProviderBreakers}, {@code reason}
     * the failure that opened it). Back to {@code pending} until {@code at}, the attempt its claim counted
     * given back: waiting out an outage costs a recipient no attempt.
     */
    record Deferred(Claimed recipient, String reason, Instant at) implements Outcome {
    }

    /**
     * Failed transiently ({@code reason}) and given up ({@code why}, a {@link RetryBackoff.GiveUp}
     * reason): after {@link RetryBackoff#MAX_ATTEMPTS} failed and dead-lettered, after
     * {@link RetryBackoff#EXPIRED} expired.
     */
    record GaveUp(Claimed recipient, String reason, String why) implements Outcome {

        public boolean expired() {
            return RetryBackoff.EXPIRED.equals(why);
        }
    }

    /** Never handed to a provider because its notification was cancelled (or is gone). */
    record Cancelled(Claimed recipient) implements Outcome {
    }

    /**
     * @param depth recipients due now and not claimed
     * @param oldestDueAge how long the oldest of them has been due; zero when none is
     */
    record QueueStats(long depth, Duration oldestDueAge) {
        public static final QueueStats EMPTY = new QueueStats(0, Duration.ZERO);
    }
}
