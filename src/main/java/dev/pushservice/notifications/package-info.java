/**
 * Notifications: immutable send requests, from {@code POST /v1/notifications} to recipient rows
 * that wait for delivery. Owns the tables {@code notifications}, {@code notification_recipients} and
 * {@code frequency_cap_sends} (the sends the apps' frequency caps count, {@link
 * dev.pushservice.notifications.FrequencyCapping}), and {@code notification_counts} and
 * {@code notification_accepted_counts} (each notification's recipient counts, kept by V46's triggers,
 * folded by {@link dev.pushservice.notifications.NotificationCounts}).
 *
 * <p><b>Where things live</b>: {@link dev.pushservice.notifications.NotificationService} creates
 * notifications, {@link dev.pushservice.notifications.NotificationStates} moves them on (cancel,
 * finishing), {@link dev.pushservice.notifications.NotificationViews} shows them. Their SQL has three
 * homes: {@code NotificationRepository} (notification rows: insert, find, lock, state, summary,
 * cursor), {@code FanOutPageRepository} (the fan-out's one page statement, built from parts) and
 * {@code NotificationReadRepository} (list, counts, recipients, daily outcomes, the preview's
 * audience reads; writes nothing).
 *
 * <p><b>Creation</b> ({@link dev.pushservice.notifications.NotificationService#create}): the body is
 * checked field by field ({@link dev.pushservice.notifications.NotificationRequest}), then against the
 * app's data (target identifiers, active segments, a non-archived template); title and body are
 * required after template resolution. One transaction inserts the notification with its snapshots
 * (content after template resolution, with the template id and version; the audience definition
 * with every segment's id, version and filter; the creation instant), its lifecycle facts and, for an
 * immediate one, its fan-out task (for a {@code device} or {@code user} target without segments, its
 * recipients instead: {@link dev.pushservice.notifications.NotificationFanOut#materializeNow}, no
 * scheduler hop). {@code (app_id, idempotency_key)} is unique: a concurrent duplicate
 * waits on the index, then replays the original; the same key with another body (SHA-256 of the
 * canonical body) is a 422. A request refused by validation stores nothing, so its key stays unused.
 *
 * <p><b>States</b> ({@link dev.pushservice.notifications.NotificationStates}): {@code draft} (future {@code scheduled_at}) → {@code queued} (due: the recurring
 * sweep {@code notification-due-drafts} reads the application clock every second) → {@code processing} (fan-out
 * started) → {@code completed} | {@code failed} | {@code cancelled}. {@code completed}: every
 * recipient terminal and at least one accepted or none failed (zero recipients included);
 * {@code failed}: recipients failed and none was accepted. Cancel works from draft, queued and
 * processing; it answers at once, and a processing notification's pending recipients are cancelled
 * in batches by the background task {@code notification-cancel}
 * ({@link dev.pushservice.notifications.NotificationCancels}). Recipient states: {@code pending} → {@code sending} (handed to a provider) →
 * {@code accepted} | {@code failed} | {@code invalid_token}; {@code pending} → {@code cancelled} |
 * {@code expired} | {@code skipped_frequency_cap} (the app's frequency cap, decided when delivery
 * claims it). Each recipient ends in exactly one terminal state.
 *
 * <p><b>Fan-out</b> ({@link dev.pushservice.notifications.NotificationFanOut}): pages of set-based
 * {@code INSERT … SELECT} (one statement per page, assembled by {@code FanOutPageRepository} from
 * its parts: the page, each recipient's times, an optional hand-over, the result) over the app's enabled, non-invalidated devices created at or before the
 * notification's audience instant (its creation, or {@code scheduled_at} for a scheduled one), in
 * keyset order with a stored cursor: resumable and idempotent. The audience is the target ∩ (any
 * included segment, when given) − every excluded segment, at the versions snapshotted at creation;
 * devices' current state (enabled, tags, the filter's fields) is read when the fan-out runs.
 * Each recipient's send time ({@code due_at}, where {@code next_attempt_at} starts) and expiry
 * ({@code expires_at}) are decided there too: {@link dev.pushservice.notifications.SendTimes} per zone
 * (local delivery time, quiet hours, TTL), {@link dev.pushservice.notifications.SendSlots} for the
 * app's throttle.
 *
 * <p><b>The seam to delivery</b>: {@link dev.pushservice.notifications.DeliveryHandoff}. Fan-out
 * calls it in the transaction of each page ({@code recipientsAdded}) and once all recipients exist
 * ({@code materialized}); {@link dev.pushservice.notifications.RecipientDelivery} implements it and is the
 * {@link dev.pushservice.delivery.DeliveryEngine}'s store. Delivery claims due recipients with
 * {@code FOR UPDATE SKIP LOCKED} (index {@code notification_recipients_work_idx}: notification,
 * platform, next_attempt_at, over pending and sending rows), renders the notification's content per recipient (with
 * {@code render_values} when present: the user's tags and properties frozen at materialization),
 * writes outcomes set-based per chunk ({@code status}, {@code attempts}, {@code last_error} reason
 * code, {@code next_attempt_at}, {@code provider_message_id}), records {@code device.invalidated}
 * through {@link dev.pushservice.devices.DeviceService#invalidate}, and calls
 * {@link dev.pushservice.notifications.NotificationStates#finishIfDone}. Its SQL runs on the
 * delivery connection pool ({@link dev.pushservice.notifications.DeliveryRecipientRepository}).
 * Delivery claims only recipients of processing notifications, so claimed recipients of a cancelled
 * notification whose instance died before recording them are ended by the recurring sweep
 * {@code delivery-cancelled-leases} ({@link dev.pushservice.notifications.StrandedRecipients}) once
 * their lease has run out: {@code cancelled}, like a lane records them. A page due at once may hand
 * its recipients straight to its instance's lane instead ({@link dev.pushservice.delivery.Handover}):
 * they are listed in a leased {@code notification_handovers} row and get their recipient row only
 * with their outcome; reads show them {@code sending} until then.
 *
 * <p><b>Made by the service</b> ({@link dev.pushservice.notifications.NotificationService#createForUsers}):
 * a journey's push step creates a notification for a list of users inside its own transaction; the
 * audience snapshot holds their ids ({@code user_ids}) and a target of its own type
 * ({@code {"type":"journey",…}}), and the fan-out runs at once in that transaction instead of as a
 * task, so the notification and its recipients commit with the caller's work or not at all. It
 * is stored by the same steps as a created one (its row, its lifecycle facts, its fan-out), with the
 * same app defaults.
 *
 * <p><b>Creation defaults</b>: {@code priority}, {@code ttl}, {@code sound} and
 * {@code interruption_level} left out by request and template come from the app's
 * {@link dev.pushservice.apps.NotificationDefaults}, resolved once and stored.
 *
 * <p>Invariants: every query filters by app; another app's notification is a 404; no statement
 * runs per recipient; every state change writes its lifecycle fact in the same transaction.
 */
package dev.pushservice.notifications;
