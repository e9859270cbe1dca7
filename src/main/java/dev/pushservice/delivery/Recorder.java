package dev.pushservice.delivery;

import dev.pushservice.platform.jobs.BackgroundPriority;
import dev.pushservice.platform.rules.Priority;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lane's recorder: a thread that writes the outcomes the lane queues ({@link #add}) in batches of
 * up to a chunk, one {@link DeliveryStore#record} transaction each, retrying while the database is
 * unavailable (an answer is never dropped), and after each batch tells the lane ({@code recorded}),
 * which frees the batch's window slots. The queue is bounded by the lane's windows: an outcome is
 * queued only for a recipient that holds a slot.
 *
 * <p>Threads: {@link #add} is called on Netty I/O threads and the lane's senders and never blocks;
 * the recorder thread blocks on the delivery pool and the database. It ends once the lane stops
 * running ({@code running}) and nothing is left unrecorded ({@code unrecordedLeft}).
 */
final class Recorder {

    private static final Logger log = LoggerFactory.getLogger(Recorder.class);
    private static final Duration LINGER = Duration.ofMillis(5);

    private final Priority priority;
    private final DeliveryStore store;
    private final Clock clock;
    private final int chunkSize;
    private final BooleanSupplier running;
    private final BooleanSupplier answersPending;
    private final BooleanSupplier unrecordedLeft;
    private final Consumer<List<DeliveryStore.Outcome>> recorded;
    private final ConcurrentLinkedQueue<DeliveryStore.Outcome> results = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private volatile Thread thread;
    private volatile boolean idle;

    /**
     * @param running whether the lane still runs
     * @param answersPending whether answers are still on their way (a short linger then gathers them into one batch)
     * @param unrecordedLeft whether any recipient of the lane is still unrecorded
     * @param recorded called on the recorder thread with each batch once it is recorded (or given up at shutdown)
     */
    Recorder(Priority priority, DeliveryStore store, Clock clock, int chunkSize, BooleanSupplier running,
             BooleanSupplier answersPending, BooleanSupplier unrecordedLeft, Consumer<List<DeliveryStore.Outcome>> recorded) {
        this.priority = priority;
        this.store = store;
        this.clock = clock;
        this.chunkSize = chunkSize;
        this.running = running;
        this.answersPending = answersPending;
        this.unrecordedLeft = unrecordedLeft;
        this.recorded = recorded;
    }

    /** Starts the recorder thread (again, after it ended). */
    void start() {
        // the field is set before the thread runs: an outcome queued before start() returns must find it to unpark
        Thread t = Thread.ofPlatform().daemon().name("delivery-" + priority.value() + "-recorder").unstarted(this::loop);
        thread = t;
        t.start();
    }

    /** Queues an outcome. Never blocks. */
    void add(DeliveryStore.Outcome outcome) {
        results.add(outcome);
        queued.incrementAndGet();
        if (idle) {
            Thread t = thread;
            if (t != null) LockSupport.unpark(t);
        }
    }

    /** Wakes the recorder (the lane stops) and waits for it to end, until {@code deadlineNanos} ({@link System#nanoTime()}). */
    void stop(long deadlineNanos) {
        Thread t = thread;
        if (t == null) return;
        LockSupport.unpark(t);
        try {
            t.join(Duration.ofNanos(Math.max(1_000_000, deadlineNanos - System.nanoTime())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        if (priority != Priority.TRANSACTIONAL) BackgroundPriority.lowerCurrentThread();
        List<DeliveryStore.Outcome> batch = new ArrayList<>(chunkSize);
        while (true) {
            if (results.isEmpty()) {
                if (!running.getAsBoolean() && !unrecordedLeft.getAsBoolean()) return;
                idle = true;
                if (results.isEmpty()) LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
                idle = false;
                continue;
            }
            // a short linger gathers a chunk's answers into one transaction, but only while more answers
            // are on their way: a lone transactional send is recorded at once, not 5 ms (or, on a busy
            // machine, a scheduler tick or more) later
            if (queued.get() < chunkSize && running.getAsBoolean() && answersPending.getAsBoolean()) {
                LockSupport.parkNanos(LINGER.toNanos());
            }
            DeliveryStore.Outcome next;
            while (batch.size() < chunkSize && (next = results.poll()) != null) batch.add(next);
            queued.addAndGet(-batch.size());
            try {
                recordDurably(batch);
            } finally {
                recorded.accept(batch);
            }
            batch.clear();
        }
    }

    /** Records {@code batch}, retrying while the database is unavailable: an answer is never dropped. */
    private void recordDurably(List<DeliveryStore.Outcome> batch) {
        long wait = 100;
        while (true) {
            try {
                store.record(List.copyOf(batch), clock.instant());
                return;
            } catch (RuntimeException e) {
                log.warn("Delivery lane {} could not record {} result(s), retrying: {}", priority.value(), batch.size(),
                        e.toString());
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(wait));
                wait = Math.min(wait * 2, 5_000);
                if (!running.getAsBoolean() && wait >= 5_000) {
                    log.warn("Delivery lane {} gives up recording {} result(s) at shutdown; their recipients are sent"
                            + " again when their lease runs out", priority.value(), batch.size());
                    return;
                }
            }
        }
    }
}
