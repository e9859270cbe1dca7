package dev.pushservice.journeys;

import dev.pushservice.events.CustomEventsCommitted;
import dev.pushservice.segments.FilterCompiler;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentVersion;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Service;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * How executions start (spec "Journey", triggers).
 *
 * <p>Custom events: V26's statement trigger on {@code events} starts the executions in the event
 * batch's own transaction (so an event answered 202 never loses its execution, and a batch costs one
 * more statement, run only when some journey is active with a custom-event trigger); here the
 * worker is only {@linkplain JourneyWakeup woken} once the batch has committed.
 *
 * <p>Segments: {@link #evaluateSegments} runs every {@code push.journeys.segment-entry-interval}
 * (the recurring task in {@link JourneySegmentSweep}) and, per active segment-triggered journey, moves
 * the journey's membership to what the segment selects now for bounded batches of users, starting new
 * members: the users changed since the last pass, then, when one is under way or due, the next
 * batches of a walk over every known user of the app (a walk starts at activation, at a new journey
 * or segment version, then every {@code push.journeys.segment-rescan-interval}; its cursor is stored
 * with each batch, so it resumes after a crash). No statement reads the whole segment. Thread-safe.
 */
@Service
class JourneyEntries {

    private static final Logger log = LoggerFactory.getLogger(JourneyEntries.class);

    /**
     * How far back each pass reads changes again: a change is stamped when its transaction starts
     * ({@code now()}) and seen when it commits, so one stamped just before a pass may be seen only by
     * the next one. Registrations and user updates are single short statements.
     */
    static final Duration LATE_COMMIT = Duration.ofSeconds(60);

    /**
     * Batches of changes a pass evaluates one by one; beyond, the walk starts again from the first
     * user instead (each batch of changes reads every change since the last pass to find its users).
     */
    static final int CHANGE_BATCHES = 10;

    private final JourneyEntryRepository entries;
    private final SegmentService segments;
    private final FilterCompiler compiler;
    private final TransactionTemplate transaction;
    private final JourneyWakeup wakeup;
    private final Clock clock;
    private final int batchSize;
    private final int walkBatchesPerPass;
    private final Duration rescanInterval;

    JourneyEntries(JourneyEntryRepository entries, SegmentService segments, FilterCompiler compiler,
                   TransactionTemplate transaction, JourneyWakeup wakeup, Clock clock,
                   @Value("${push.journeys.segment-batch-size:5000}") int batchSize,
                   @Value("${push.journeys.segment-walk-batches-per-pass:200}") int walkBatchesPerPass,
                   @Value("${push.journeys.segment-rescan-interval:1h}") Duration rescanInterval) {
        if (batchSize < 1) throw new IllegalArgumentException("push.journeys.segment-batch-size must be at least 1");
        if (walkBatchesPerPass < 1) {
            throw new IllegalArgumentException("push.journeys.segment-walk-batches-per-pass must be at least 1");
        }
        if (rescanInterval.isNegative()) throw new IllegalArgumentException("push.journeys.segment-rescan-interval must not be negative");
        this.batchSize = batchSize;
        this.walkBatchesPerPass = walkBatchesPerPass;
        this.rescanInterval = rescanInterval;
        this.entries = entries;
        this.segments = segments;
        this.compiler = compiler;
        this.transaction = transaction;
        this.wakeup = wakeup;
        this.clock = clock;
    }

    /** A batch with custom events committed: whatever executions it started are due now. */
    @EventListener
    void customEventsCommitted(CustomEventsCommitted committed) {
        wakeup.wake();
    }

    /**
     * One pass over every active segment-triggered journey ({@link #evaluateSegment} each; one journey's
     * failure does not stop the others: it resumes at the next pass). A journey whose segment is
     * archived starts no one and keeps its members until the segment is usable again.
     *
     * @return executions started
     */
    int evaluateSegments() {
        int started = 0;
        for (JourneyEntryRepository.SegmentJourney journey : entries.activeSegmentJourneys()) {
            Optional<SegmentVersion> segment = segments.currentIfActive(journey.appId(), journey.segmentId());
            if (segment.isEmpty()) continue;
            try {
                started += evaluateSegment(journey, segment.get());
            } catch (RuntimeException e) {
                log.warn("Segment entries of journey {} failed; they resume at the next pass", journey.id(), e);
            }
        }
        return started;
    }

    /**
     * One pass of one journey, each statement a bounded batch in a transaction of its own: first the
     * users changed since the last pass (created or updated known users, users with a new device),
     * then, when a walk is under way or due, up to {@code walkBatchesPerPass} batches of the walk over
     * every known user of the app. A new generation (first activation, new journey version, new
     * segment version) starts a walk from the first user. Every batch moves the journey's membership
     * to what the segment selects now for its users and starts the new members (see
     * {@link JourneyEntryRepository#walkBatch}).
     */
    private int evaluateSegment(JourneyEntryRepository.SegmentJourney journey, SegmentVersion segment) {
        String generation = journey.version() + "/" + segment.segmentId() + "/" + segment.version();
        JourneyEntryRepository.Scan scan = entries.scan(journey.id()).orElse(null);
        if (scan == null || !scan.generation().equals(generation)) {
            entries.startGeneration(journey, generation);
            scan = entries.scan(journey.id()).orElseThrow();
        }
        int started = 0;
        Instant changesFrom = scan.changesFrom();
        // changes: from where the last pass left off, up to now (minus a margin for transactions that
        // stamped a change earlier and commit late; reading a change twice is harmless)
        Instant until = entries.databaseNow().minus(LATE_COMMIT);
        UUID after = new UUID(0, 0);
        for (int batches = 0; ; batches++) {
            if (batches == CHANGE_BATCHES) {
                // a bulk change (an import of users, say): a walk sees them all at a bounded cost per
                // statement, where reading the changes again for each further batch would not
                entries.restartWalk(journey.id(), generation);
                break;
            }
            UUID from = after;
            JourneyEntryRepository.Batch b = batch(() -> entries.changesBatch(journey, changesFrom, from,
                    batchSize, compiler.compileForFew(journey.appId(), segment.filter(), "js"), clock.instant()));
            if (!b.live()) return started;
            started += b.started();
            if (b.users() < batchSize) break;
            after = UUID.fromString(b.last());
        }
        if (until.isAfter(changesFrom)) entries.changesFrom(journey.id(), generation, until);

        // the walk: under way, or due again
        scan = entries.scan(journey.id()).orElseThrow();
        if (scan.walkAfter() == null) {
            if (!scan.walkDue()) return started;
            entries.startWalk(journey.id(), generation);
            scan = entries.scan(journey.id()).orElseThrow();
        }
        String cursor = scan.walkAfter();
        for (int i = 0; i < walkBatchesPerPass && cursor != null; i++) {
            String at = cursor;
            JourneyEntryRepository.Batch b = batch(() -> entries.walkBatch(journey, generation, at, batchSize, rescanInterval,
                    compiler.compileForFew(journey.appId(), segment.filter(), "js"), clock.instant()));
            if (!b.live()) break;
            started += b.started();
            cursor = b.users() < batchSize ? null : b.last();
        }
        return started;
    }

    private JourneyEntryRepository.Batch batch(java.util.function.Supplier<JourneyEntryRepository.Batch> statement) {
        JourneyEntryRepository.Batch b = transaction.execute(status -> statement.get());
        if (b.started() > 0) wakeup.wake(); // a long walk's first entries need not wait for its end
        return b;
    }
}
