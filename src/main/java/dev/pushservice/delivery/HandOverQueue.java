package dev.pushservice.delivery;

import dev.pushservice.platform.rules.Platform;
import dev.pushservice.platform.rules.Priority;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One lane's queue of recipients handed over by fan-out pages ({@link Handover}) and not yet sent, per
 * platform, with the room a page reserves for them before its transaction: twice the lane's in-flight
 * budget, so a page of one budget's worth is inserted while the one before it is sent. A recipient
 * holds its room from the page's reservation until the lane takes it for the senders.
 *
 * <p>Threads: fan-out threads reserve and give back room and add the recipients after their page
 * commits; the lane's claimer takes them as in-flight budget frees; the stopping lane drains it.
 * Nothing here blocks. Thread-safe.
 */
final class HandOverQueue {

    private final Map<Platform, Semaphore> rooms = new EnumMap<>(Platform.class);
    @SuppressWarnings("unchecked")
    private final ConcurrentLinkedQueue<DeliveryStore.Claimed>[] handed = new ConcurrentLinkedQueue[Platform.values().length];
    private final AtomicInteger[] queued = new AtomicInteger[Platform.values().length];

    /** {@code room}: recipients each platform may hold; the queue lengths are metered for {@code lane}. */
    HandOverQueue(int room, Priority lane, DeliveryMetrics metrics) {
        for (Platform platform : Platform.values()) {
            rooms.put(platform, new Semaphore(room));
            handed[platform.ordinal()] = new ConcurrentLinkedQueue<>();
            queued[platform.ordinal()] = new AtomicInteger();
            metrics.handedWaiting(lane, platform, queued[platform.ordinal()]);
        }
    }

    /** Free room of {@code platform}. */
    int room(Platform platform) {
        return rooms.get(platform).availablePermits();
    }

    /** Takes up to {@code max} of {@code platform}'s free room without waiting; returns how much it took. */
    int reserve(Platform platform, int max) {
        Semaphore room = rooms.get(platform);
        while (true) {
            int n = Math.min(room.availablePermits(), max);
            if (n <= 0) return 0;
            if (room.tryAcquire(n)) return n;
        }
    }

    /** Gives back room {@link #reserve} took and no recipient used. */
    void release(Platform platform, int n) {
        if (n > 0) rooms.get(platform).release(n);
    }

    /** Queues {@code recipients}, each holding room reserved for its platform; returns how many per platform (by ordinal). */
    int[] add(List<DeliveryStore.Claimed> recipients) {
        int[] n = new int[Platform.values().length];
        for (DeliveryStore.Claimed r : recipients) {
            int p = r.platform().ordinal();
            handed[p].add(r);
            queued[p].incrementAndGet();
            n[p]++;
        }
        return n;
    }

    /** Recipients of {@code platform} waiting to be sent. */
    int waiting(Platform platform) {
        return queued[platform.ordinal()].get();
    }

    boolean anyWaiting() {
        for (AtomicInteger n : queued) if (n.get() > 0) return true;
        return false;
    }

    /** Takes up to {@code n} recipients of {@code platform} for the senders and gives their room back. The claimer. */
    List<DeliveryStore.Claimed> take(Platform platform, int n) {
        int p = platform.ordinal();
        List<DeliveryStore.Claimed> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            DeliveryStore.Claimed r = handed[p].poll();
            if (r == null) break;
            batch.add(r);
        }
        queued[p].addAndGet(-batch.size());
        rooms.get(platform).release(batch.size());
        return batch;
    }

    /** Removes every waiting recipient of {@code platform} (left to their lease) and gives their room back; returns how many. */
    int drain(Platform platform) {
        int n = 0;
        while (handed[platform.ordinal()].poll() != null) n++;
        queued[platform.ordinal()].addAndGet(-n);
        rooms.get(platform).release(n);
        return n;
    }
}
