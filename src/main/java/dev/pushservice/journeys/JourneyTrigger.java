package dev.pushservice.journeys;

import java.util.UUID;

/** What starts an execution of a journey. */
public sealed interface JourneyTrigger {

    /**
     * {@code {"type":"custom_event","event_name":…}}: a custom event of that name, recorded for a
     * device that belongs to a known user, starts an execution for that user.
     */
    record CustomEvent(String eventName) implements JourneyTrigger {
    }

    /**
     * {@code {"type":"segment","segment_id":…}}: a user enters when one of their devices starts
     * matching the (active) segment; how and how often entry is detected is in
     * docs/api-decisions.md.
     */
    record SegmentEntry(UUID segmentId) implements JourneyTrigger {
    }
}
