package dev.pushservice.notifications;

import dev.pushservice.delivery.Handover;
import java.time.Duration;
import java.util.UUID;

/**
 * The seam between fan-out (this package) and delivery: how delivery learns that recipients are
 * ready, and how a fan-out page hands recipients straight to this instance's lane. Fan-out calls
 * {@link #recipientsAdded} and {@link #materialized} inside the transaction that commits the
 * recipients; an implementation must not do slow work or block on I/O there (it acts after the
 * commit: waking its lane, finishing a notification with nothing left to send).
 * {@link #handover} is called outside the page's transaction and may wait for room.
 *
 * <p>Until a delivery implementation exists as a bean ({@link RecipientDelivery}, on instances with
 * the {@code worker} role), nothing delivers: recipients stay {@code pending} and the notification
 * stays {@code processing} (docs/api-decisions.md). Implementations are thread-safe.
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
     * lane without a claim ({@link Handover}): with other workers alive, this instance's share of the
     * page at once; alone, waiting up to {@code wait} for room. Null when there is none (the page
     * inserts every recipient {@code pending}). {@code seen}: devices per platform (by ordinal) of the
     * notification's previous page. Called outside the page's transaction.
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
