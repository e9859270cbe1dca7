package dev.pushservice.events;

import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.Unavailable;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.stereotype.Service;

/**
 * Ingest of one validated event: hands it to the {@link EventWriter} and returns once its batch is
 * committed. A full queue is {@link Unavailable} (the client retries after a second); an event
 * whose device is not the app's is {@link InvalidInput} on {@code device_id}, one naming a
 * notification that is not the app's (unknown or another app's) on {@code notification_id}.
 */
@Service
class EventService {

    /** How long a request waits for its batch; far above a normal commit, only hit when the database hangs. */
    static final Duration COMMIT_WAIT = Duration.ofSeconds(30);
    static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    private final EventWriter writer;
    private final NotificationReferences notifications;

    EventService(EventWriter writer, NotificationReferences notifications) {
        this.writer = writer;
        this.notifications = notifications;
    }

    void submit(NewEvent event) {
        if (event.notificationId() != null && !notifications.exists(event.appId(), event.notificationId())) {
            throw InvalidInput.of("notification_id", "is not a notification of this app");
        }
        EventWriter.Outcome outcome = switch (writer.submit(event)) {
            case EventWriter.Submission.Overloaded o -> throw new Unavailable(
                    "Event ingest is at capacity; retry shortly", RETRY_AFTER);
            case EventWriter.Submission.Queued q -> await(q);
        };
        if (outcome == EventWriter.Outcome.UNKNOWN_DEVICE) {
            throw InvalidInput.of("device_id", "is not a device of this app");
        }
    }

    private static EventWriter.Outcome await(EventWriter.Submission.Queued queued) {
        try {
            return queued.outcome().get(COMMIT_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("Event batch was not written", e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("Event batch was not written within " + COMMIT_WAIT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting for the event batch", e);
        }
    }
}
