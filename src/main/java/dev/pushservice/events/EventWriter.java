package dev.pushservice.events;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.SmartLifecycle;
import org.springframework.dao.NonTransientDataAccessException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Group commit for event ingest. A request {@linkplain #submit submits} a validated event and waits
 * on the returned future; a few writer threads each take everything queued (up to a batch limit),
 * write it in one transaction ({@link EventRepository#write}), commit, and only then complete the
 * futures. So an event answered 202 is committed, and the cost of a commit is shared by every event
 * that arrived while the previous batch was being written: the busier, the bigger the batches.
 *
 * <p>After a committed batch that held custom events with a device, publishes
 * {@link CustomEventsCommitted} (journey executions those events started are due).
 *
 * <p>Failures: a deadlock or serialization failure retries the whole batch; a data error splits the
 * batch in halves so only the event at fault fails; anything else (database down) fails the batch.
 * A failed future means nothing of that batch was written.
 *
 * <p>Back-pressure: the queue is bounded; {@link #submit} waits up to {@code enqueue-wait} for room
 * and otherwise returns {@link Submission.Overloaded}. Stopping refuses new events and writes what
 * is queued before the threads end (the web server has stopped taking requests by then). Thread-safe.
 */
@Component
class EventWriter implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(EventWriter.class);
    private static final int RETRIES = 3;

    /** What {@link #submit} did with an event. */
    public sealed interface Submission {
        /** Queued: the future completes once the batch is committed (or failed). */
        record Queued(CompletableFuture<Outcome> outcome) implements Submission {
        }

        /** The queue stayed full (or the writer is stopping): try again later. */
        record Overloaded() implements Submission {
        }
    }

    /** The result of a committed batch for one event. */
    public enum Outcome {
        STORED,
        /** The event names a device that does not exist in its app; nothing was stored for it. */
        UNKNOWN_DEVICE
    }

    private record Pending(NewEvent event, CompletableFuture<Outcome> outcome) {
    }

    private final EventRepository repository;
    private final TransactionTemplate transaction;
    private final ApplicationEventPublisher published;
    private final BlockingQueue<Pending> queue;
    private final int writers;
    private final int maxBatch;
    private final Duration enqueueWait;
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running;

    EventWriter(EventRepository repository, TransactionTemplate transaction, ApplicationEventPublisher published,
                @Value("${push.events.writers:2}") int writers,
                @Value("${push.events.max-batch:1000}") int maxBatch,
                @Value("${push.events.queue-capacity:20000}") int queueCapacity,
                @Value("${push.events.enqueue-wait:1s}") Duration enqueueWait) {
        if (writers < 1 || maxBatch < 1 || queueCapacity < 1) {
            throw new IllegalArgumentException("push.events.writers, max-batch and queue-capacity must be at least 1");
        }
        this.repository = repository;
        this.transaction = transaction;
        this.published = published;
        this.queue = new LinkedBlockingQueue<>(queueCapacity);
        this.writers = writers;
        this.maxBatch = maxBatch;
        this.enqueueWait = enqueueWait;
    }

    /** Queues one event; waits for room at most {@code enqueue-wait}. */
    Submission submit(NewEvent event) {
        if (!running) return new Submission.Overloaded();
        Pending pending = new Pending(event, new CompletableFuture<>());
        try {
            if (!queue.offer(pending, enqueueWait.toMillis(), TimeUnit.MILLISECONDS)) return new Submission.Overloaded();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Submission.Overloaded();
        }
        return new Submission.Queued(pending.outcome());
    }

    private void run() {
        List<Pending> batch = new ArrayList<>(maxBatch);
        while (running || !queue.isEmpty()) {
            try {
                Pending first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) continue;
                batch.add(first);
                queue.drainTo(batch, maxBatch - 1);
                write(batch);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // write() completes every future itself; this is a bug guard so the thread never dies silently
                log.error("Event writer failed unexpectedly", e);
                batch.forEach(p -> p.outcome().completeExceptionally(e));
            } finally {
                batch.clear();
            }
        }
    }

    private void write(List<Pending> batch) {
        for (int attempt = 1; ; attempt++) {
            try {
                Set<UUID> refused = transaction.execute(status -> repository.write(batch.stream().map(Pending::event).toList()));
                int custom = 0;
                for (Pending p : batch) {
                    boolean stored = !refused.contains(p.event().id());
                    p.outcome().complete(stored ? Outcome.STORED : Outcome.UNKNOWN_DEVICE);
                    if (stored && p.event().type() == EventType.CUSTOM && p.event().deviceId() != null) custom++;
                }
                if (custom > 0) committed(custom);
                return;
            } catch (PessimisticLockingFailureException e) {
                if (attempt < RETRIES) continue;
                fail(batch, e);
                return;
            } catch (NonTransientDataAccessException e) {
                if (batch.size() > 1 && isDataError(e)) {
                    // one bad event must not fail the others: retry the halves on their own
                    write(batch.subList(0, batch.size() / 2));
                    write(batch.subList(batch.size() / 2, batch.size()));
                } else {
                    fail(batch, e);
                }
                return;
            } catch (RuntimeException e) {
                fail(batch, e);
                return;
            }
        }
    }

    /** Tells listeners (journeys: executions the batch started are due) after the answers went out. */
    private void committed(int custom) {
        try {
            published.publishEvent(new CustomEventsCommitted(custom));
        } catch (RuntimeException e) {
            // the batch is committed and answered; a listener's failure only delays what it would have woken
            log.warn("A listener of committed custom events failed", e);
        }
    }

    /** SQL state class 22 (data exception) or 23 (integrity constraint): the data, not the database, is at fault. */
    private static boolean isDataError(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql && sql.getSQLState() != null
                    && (sql.getSQLState().startsWith("22") || sql.getSQLState().startsWith("23"))) {
                return true;
            }
        }
        return false;
    }

    private static void fail(List<Pending> batch, RuntimeException e) {
        log.error("Writing {} events failed; their requests get an error (503 when the database is unreachable)", batch.size(), e);
        batch.forEach(p -> p.outcome().completeExceptionally(e));
    }

    @Override
    public void start() {
        running = true;
        for (int i = 0; i < writers; i++) {
            Thread t = Thread.ofPlatform().name("event-writer-" + i).daemon(true).unstarted(this::run);
            threads.add(t);
            t.start();
        }
    }

    @Override
    public void stop() {
        // no interrupt: a writer may be inside a transaction; it sees the flag within one poll (100 ms)
        running = false;
        for (Thread t : threads) {
            try {
                t.join(Duration.ofSeconds(30));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        threads.clear();
        // anything still here arrived after the threads ended; its requests must not hang
        Pending left;
        while ((left = queue.poll()) != null) left.outcome().completeExceptionally(new IllegalStateException("shutting down"));
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Stops after the web server (lower phase stops later), so requests in flight get their answer. */
    @Override
    public int getPhase() {
        return SmartLifecycle.DEFAULT_PHASE - 4096;
    }
}
