package dev.pushservice.notifications;

import dev.pushservice.delivery.Handover;
import java.time.Duration;
import java.util.UUID;

/**
 * The seam between fan-out (this package) and delivery: how delivery learns that recipients are
 * ready. Fan-out calls it inside the transaction that commits the recipients, so a delivery
 * implementation can enqueue its own durable work (chunk tasks) atomically with them; it must not
 * do slow work or block on I/O in these calls (hand work over after commit instead).
 *
 * <p>Until a delivery implementation exists as a bean, nothing delivers: recipients stay
 * {@code pending} and the notification stays {@code processing} (docs/api-decisions.md). What a
 * delivery implementation does afterwards: claim pending recipients of a notification with
 * {@code FOR UPDATE SKIP LOCKED} (index {@code notification_recipients_work_idx}), mark them
 * {@code sending} before handing them to a provider, record the outcome per recipient
 * ({@code accepted}, {@code failed}, {@code invalid_token}, {@code expired}; or back to
 * {@code pending} with a later {@code next_attempt_at} to retry), and call
 * {@link NotificationService#finishIfDone} when it has made recipients terminal.
 * {@link NotificationService#snapshot} gives the content and options to render.
 */
public interface DeliveryHandoff {

    /** A page of {@code count} new pending recipients of the notification was inserted (called per page). */
    void recipientsAdded(UUID appId, UUID notificationId, String priority, int count);

    /**
     * Every recipient of the notification exists now ({@code recipients} in total, possibly zero:
     * then the notification is already completed when this is called). {@code inOneTransaction}: every
     * recipient was inserted by the calling transaction (a tiny audience materialized at creation), so
     * none can be delivered, let alone recorded, before the count commits with them.
     */
    void materialized(UUID appId, UUID notificationId, String priority, long recipients, boolean inOneTransaction);

    /**
     * The notification was cancelled (called after the commit): recipients claimed but not yet
     * handed to a provider must not be.
     */
    default void cancelled(UUID appId, UUID notificationId) {
    }

    /**
     * Room in this instance's delivery for recipients of the next fan-out page to go straight to a
     * lane without a claim ({@link Handover}), waiting up to {@code wait} for it; null when there is
     * none (the page inserts every recipient {@code pending}). {@code seen}: devices per platform (by
     * ordinal) of the notification's previous page. Called outside the page's transaction.
     */
    default Handover handover(UUID appId, String priority, int max, int[] seen, Duration wait) {
        return null;
    }

    /** Used while no delivery bean exists: nothing is delivered. */
    DeliveryHandoff NONE = new DeliveryHandoff() {
        @Override
        public void recipientsAdded(UUID appId, UUID notificationId, String priority, int count) {
        }

        @Override
        public void materialized(UUID appId, UUID notificationId, String priority, long recipients, boolean inOneTransaction) {
        }
    };
}
