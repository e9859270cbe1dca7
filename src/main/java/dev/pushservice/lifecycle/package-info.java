/**
 * The one record of what happened to notifications, devices, exports and journey executions: an outbox table
 * ({@code lifecycle_events}) of lifecycle facts, each written by {@link
 * dev.pushservice.lifecycle.LifecycleEventRepository#record} in the same transaction as the change it
 * describes, so a fact exists exactly when its change committed.
 *
 * <p>Facts ({@link dev.pushservice.lifecycle.LifecycleEventRepository.Kind}): {@code notification.created},
 * {@code notification.queued}, {@code notification.processing}, {@code notification.completed},
 * {@code notification.failed}, {@code notification.cancelled}, {@code device.disabled},
 * {@code user.deleted}, {@code device.invalidated} and {@code export.completed}, recorded through
 * {@code record}; and two kinds
 * written by triggers (V16) so the hot paths keep their single statement: {@code device.registered}
 * (an AFTER INSERT row trigger on {@code devices}: fires only for a new device, never for a
 * refresh, and since V53 writes only for apps with an enabled webhook subscribed to it) and {@code event.<event_type>} (a statement trigger on {@code events}: one set-based
 * insert per batch, only for apps with an enabled webhook subscribed to the kind). Journey facts
 * ({@code journey.execution.*}, {@code journey.goal.reached}) are, like engagement facts, recorded
 * only for apps with such a webhook: {@code started} by V33's statement trigger on
 * {@code journey_executions}, the worker's through {@link
 * dev.pushservice.lifecycle.LifecycleEventRepository#recordSubscribed} (one statement per batch),
 * {@code cancelled} by the journeys' archive statement itself (any number of rows, never through
 * memory). Rows are never updated or deleted by their writers. Ids come from a sequence and do not
 * follow commit order (a transaction may take low ids and commit seconds after others with higher
 * ids), so a reader that needs every fact must not keep a cursor on id: each fact carries
 * {@code xid}, the id of the transaction that wrote it (a column default, V31), and the webhook relay
 * follows which transactions have finished (see {@code WebhookRepository.relay}).
 */
package dev.pushservice.lifecycle;
