package dev.pushservice.journeys;

import dev.pushservice.events.CustomEventsCommitted;
import dev.pushservice.segments.FilterCompiler;
import dev.pushservice.segments.SegmentService;
import dev.pushservice.segments.SegmentVersion;
import java.time.Clock;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
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
 * the journey's membership to the users the segment selects now, starting new members (one statement
 * per journey, see {@link JourneyEntryRepository#evaluateSegment}). Entry is therefore seen up to one
 * interval (plus the evaluation itself) after it happens; a user who enters and leaves between two
 * evaluations is not seen at all. Thread-safe.
 */
@Service
class JourneyEntries {

    private static final Logger log = LoggerFactory.getLogger(JourneyEntries.class);

    private final JourneyEntryRepository entries;
    private final SegmentService segments;
    private final FilterCompiler compiler;
    private final TransactionTemplate transaction;
    private final JourneyWakeup wakeup;
    private final Clock clock;

    JourneyEntries(JourneyEntryRepository entries, SegmentService segments, FilterCompiler compiler,
                   TransactionTemplate transaction, JourneyWakeup wakeup, Clock clock) {
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
     * One evaluation of every active segment-triggered journey, each in its own transaction (one
     * journey's failure does not stop the others; it is evaluated again next time). A journey whose
     * segment is archived starts no one and keeps its members until the segment is usable again.
     *
     * @return executions started
     */
    int evaluateSegments() {
        int started = 0;
        for (JourneyEntryRepository.SegmentJourney journey : entries.activeSegmentJourneys()) {
            Optional<SegmentVersion> segment = segments.currentIfActive(journey.appId(), journey.segmentId());
            if (segment.isEmpty()) continue;
            try {
                Integer n = transaction.execute(status -> entries.evaluateSegment(journey,
                        compiler.compile(journey.appId(), segment.get().filter(), "js"), clock.instant()));
                started += n == null ? 0 : n;
            } catch (RuntimeException e) {
                log.warn("Segment entries of journey {} failed; it is evaluated again at the next run", journey.id(), e);
            }
        }
        if (started > 0) wakeup.wake();
        return started;
    }
}
