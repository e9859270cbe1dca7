package dev.pushservice.journeys;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.stereotype.Component;

/**
 * The in-process hand-over between what makes executions due (entries from events or segments, a
 * journey resumed) and the worker that runs them: callers {@link #wake} after their transaction
 * committed, so due work starts without waiting for the next poll. Polling stays the safety net
 * (a wake-up lost with its instance, or one from another instance, is found by the poll).
 * Thread-safe; {@link #wake} never blocks.
 */
@Component
public class JourneyWakeup {

    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();

    /** Registers what runs on {@link #wake}; it must return at once (signal a thread, never work inline). */
    void onWake(Runnable listener) {
        listeners.add(listener);
    }

    /** Executions may be due now. Call after the commit that made them so. */
    public void wake() {
        for (Runnable listener : listeners) {
            listener.run();
        }
    }
}
