package dev.pushservice.delivery;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Per push-service origin ({@link PushProvider#origin}), how many of one lane's requests to it are
 * open, and the sends that wait for one of them to end: one slow origin (a self-hosted push service,
 * one answering a few hundred pushes a second) is bounded by its own concurrency, so it never takes
 * the whole in-flight budget of its platform and the lane's other origins go on at their pace.
 *
 * <p>An origin may have {@link #inFlightLimit} requests open and {@link #waitingLimit} sends waiting
 * (both hold their budget slot in the lane, so the budget still bounds everything claimed and not
 * recorded); a send beyond that is {@link Admission#FULL}: the lane gives the recipient back to the
 * store to be claimed again a poll interval later. A waiting send is started by the answer that frees
 * its origin's slot ({@link #answered}), which hands it to a sender thread.
 *
 * <p>Thread-safe and never blocking: called by sender threads and on Netty I/O threads. Each origin's
 * state changes atomically ({@link ConcurrentHashMap#compute}); an origin with nothing open or waiting
 * is forgotten.
 */
final class OriginGates<T> {

    /** What {@link #admit} decided for a send. */
    enum Admission {
        /** Send now: it holds one of its origin's slots until {@link #answered}. */
        SEND,
        /** Queued behind its origin's open requests: {@link #answered} returns it when a slot frees. */
        WAIT,
        /** Its origin has as many open and waiting as it may: not sent now. */
        FULL
    }

    private static final class Gate<T> {
        int open;
        final ArrayDeque<T> waiting = new ArrayDeque<>();
    }

    private final int inFlightLimit;
    private final int waitingLimit;
    private final ConcurrentHashMap<String, Gate<T>> gates = new ConcurrentHashMap<>();

    /** Half of a lane's budget open per origin, a quarter waiting: a slow origin holds at most three quarters of it. */
    static <T> OriginGates<T> forBudget(int budget) {
        return new OriginGates<>(Math.max(1, budget / 2), Math.max(1, budget / 4));
    }

    OriginGates(int inFlightLimit, int waitingLimit) {
        this.inFlightLimit = inFlightLimit;
        this.waitingLimit = waitingLimit;
    }

    int inFlightLimit() {
        return inFlightLimit;
    }

    /** Takes a slot of {@code origin} for a send, or queues {@code send} for one, or neither. */
    Admission admit(String origin, T send) {
        Admission[] decided = new Admission[1];
        gates.compute(origin, (k, gate) -> {
            Gate<T> g = gate == null ? new Gate<>() : gate;
            if (g.open < inFlightLimit) {
                g.open++;
                decided[0] = Admission.SEND;
            } else if (g.waiting.size() < waitingLimit) {
                g.waiting.add(send);
                decided[0] = Admission.WAIT;
            } else {
                decided[0] = Admission.FULL;
            }
            return g;
        });
        return decided[0];
    }

    /**
     * A request to {@code origin} ended: returns the waiting send that takes over its slot (the caller
     * runs it, off the I/O thread), or null when none waits and the slot is free again.
     */
    @SuppressWarnings("unchecked")
    T answered(String origin) {
        Object[] next = new Object[1];
        gates.computeIfPresent(origin, (k, g) -> {
            next[0] = g.waiting.poll();
            if (next[0] != null) return g; // the slot passes to it
            g.open--;
            return g.open <= 0 ? null : g;
        });
        return (T) next[0];
    }

    /** Removes every waiting send (the lane stops); their origins' open requests still end through {@link #answered}. */
    List<T> drain() {
        List<T> drained = new ArrayList<>();
        for (String origin : gates.keySet()) {
            gates.computeIfPresent(origin, (k, g) -> {
                drained.addAll(g.waiting);
                g.waiting.clear();
                return g.open <= 0 ? null : g;
            });
        }
        return drained;
    }
}
