package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Platform;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Room in one lane of this instance, reserved by {@link DeliveryEngine#reserve} for the recipients
 * of one fan-out page that go straight to the lane (its queue of handed recipients, sent ahead of any
 * claim as in-flight budget frees): the page lists up to {@link #room(Platform)} recipients per
 * platform in one handover row ({@code notification_handovers}), leased to this instance until
 * {@link #leaseEnd}, their attempt counted, and hands them over after its commit ({@link #deliver}).
 * They have no recipient row until their outcome is recorded: recording inserts it
 * ({@link DeliveryStore.Claimed#handed()}). No claim statement runs for them, and each recipient is
 * written once, with its outcome, instead of inserted, claimed and updated. Recipients beyond the room
 * are listed in unleased handovers (V59, {@link #unleasedChunk}), pending until the claimer of some
 * worker's lane leases one whole into its hand-over queue: from there on they are handed recipients as
 * these are.
 *
 * <p>Crash safety is the lease's: if this instance dies before recording a handed recipient, once
 * the handover's lease ends the claim of any instance gives it a {@code pending} row and sends it
 * (only those in flight at the crash can be sent twice). Nothing is handed over before the commit, and
 * a page that rolls back gives its room back ({@link #release}). A handed recipient waits in the
 * queue for at most as long as the lane needs to send one budget's worth of messages, far less than
 * the lease. Reads of the recipients and their counts show a listed, unrecorded recipient as
 * {@code sending}.
 *
 * <p>Used by one thread; exactly one of {@link #deliver} and {@link #release} takes effect.
 */
public final class Handover {

    private static final Logger log = LoggerFactory.getLogger(Handover.class);

    private final DeliveryEngine engine;
    private final Lane lane;
    private final int[] reserved;
    private final int limit;
    private final Instant leaseEnd;
    private boolean done;

    Handover(DeliveryEngine engine, Lane lane, int[] reserved, int limit, Instant leaseEnd) {
        this.engine = engine;
        this.lane = lane;
        this.reserved = reserved;
        this.limit = limit;
        this.leaseEnd = leaseEnd;
    }

    /** Recipients of {@code platform} the page may hand over. */
    public int room(Platform platform) {
        return reserved[platform.ordinal()];
    }

    /** How many devices the page should select: what the room takes, given the platform mix seen so far. */
    public int limit() {
        return limit;
    }

    /** The most recipients one unleased handover lists (see {@link #unleasedChunk}). */
    public static final int UNLEASED_MAX = 250;

    /**
     * How many recipients of the page's rest (beyond {@link #room}) one unleased handover lists: at most
     * {@link #UNLEASED_MAX} and at most this lane's in-flight budget, so that a lane of a worker configured
     * as this one always has the room to lease one whole ({@link Claimer}, {@code leaseHandovers}; the room
     * is twice the budget). Smaller handovers cost a row per run; larger ones would wait for room longer.
     */
    public int unleasedChunk() {
        return Math.min(UNLEASED_MAX, lane.capacity());
    }

    /** The lease of the handed recipients: their handover's {@code lease_until}. */
    public Instant leaseEnd() {
        return leaseEnd;
    }

    /**
     * After the page's commit: hands {@code recipients} (those its handover lists, at most
     * {@link #room} per platform) to the lane, sent as {@code blueprint} says, and gives back the
     * room they did not use.
     */
    public void deliver(List<DeliveryStore.Claimed> recipients, Blueprint blueprint) {
        if (done) return;
        done = true;
        int[] used = new int[reserved.length];
        List<DeliveryStore.Claimed> handed = new ArrayList<>(recipients.size());
        for (DeliveryStore.Claimed r : recipients) {
            int p = r.platform().ordinal();
            if (used[p] == reserved[p]) {
                // a bug in the page statement: sent when its lease runs out, never without room
                log.error("Notification {}: more recipients handed over than reserved for {}; left to their lease",
                        r.notificationId(), r.platform().value());
                continue;
            }
            used[p]++;
            handed.add(r);
        }
        if (!handed.isEmpty()) {
            engine.knownBlueprint(blueprint);
            lane.handOver(handed);
        }
        for (Platform p : Platform.values()) lane.release(p, reserved[p.ordinal()] - used[p.ordinal()]);
    }

    /** Nothing was handed over (the page rolled back or handed nothing over): gives the room back. */
    public void release() {
        if (done) return;
        done = true;
        for (Platform p : Platform.values()) lane.release(p, reserved[p.ordinal()]);
    }
}
