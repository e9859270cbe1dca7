package dev.pushservice.delivery;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Lets a cancel wait for the sends that passed their cancel check just before it. A sender checks that
 * its notification is not cancelled and then hands the request to its provider; a cancel marked between
 * the two would answer while that request is still on its way out, and reach the provider after the
 * answer (seen: 59 requests of a 400-wide wave that started as the cancel committed). So a sender holds
 * the fence from before its check until its request is written ({@link #enter}, {@link Pass#run}),
 * and the cancel, once its mark is set, waits in {@link #awaitEarlier} for every send that entered before
 * that. Sends that enter after it see the mark; at most those already in progress at its epoch's turn are
 * waited for too, so a stream of new sends on a busy lane cannot hold it up.
 *
 * <p>The wait is a grace period of two epochs, as in userspace RCU: an entering sender counts itself in
 * its epoch's slot (and moves to the next slot if the epoch turned meanwhile); the waiter turns the epoch
 * and waits for the old slot to empty, twice, so both slots have been emptied of everything that entered
 * before the first turn. A sender pays two atomic increments and a read; waiters are serialized.
 *
 * <p>Thread-safe. {@link #enter} and {@link Pass#run} never block.
 */
final class SendFence {

    private final AtomicLong epoch = new AtomicLong();
    private final AtomicIntegerArray open = new AtomicIntegerArray(2);

    /**
     * Before the cancel check: the send holds the fence until the returned pass is run, once its request is
     * written (running it again does nothing).
     */
    Pass enter() {
        while (true) {
            long e = epoch.get();
            int slot = (int) (e & 1);
            open.incrementAndGet(slot);
            if (epoch.get() == e) return new Pass(slot);
            open.decrementAndGet(slot); // the epoch turned between the read and the count: count in the new one
        }
    }

    /** One send's hold on the fence; {@link #run} lets go of it, the first time only. Any thread. */
    final class Pass extends AtomicBoolean implements Runnable {
        private final int slot;

        private Pass(int slot) {
            this.slot = slot;
        }

        @Override
        public void run() {
            if (compareAndSet(false, true)) open.decrementAndGet(slot);
        }
    }

    /**
     * Waits until every send that entered before this call has let go (its pass run), at most {@code max}. Call after the
     * mark the senders check is set. Returns false when {@code max} ran out first (a request still waiting
     * for a connection, e.g. one being opened).
     */
    synchronized boolean awaitEarlier(Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        for (int turn = 0; turn < 2; turn++) {
            int slot = (int) (epoch.getAndIncrement() & 1);
            while (open.get(slot) > 0) {
                if (System.nanoTime() - deadline > 0) return false;
                LockSupport.parkNanos(20_000);
            }
        }
        return true;
    }
}
