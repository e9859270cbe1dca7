/**
 * Webhooks: endpoints that receive signed deliveries of lifecycle facts. Owns the tables
 * {@code webhooks}, {@code webhook_deliveries} and {@code webhook_relay} (migrations V16, V31); the
 * decisions a user sees are in {@code docs/api-decisions.md} "Webhooks".
 *
 * <p><b>Path</b>: {@link dev.pushservice.webhooks.WebhookController} (HTTP) →
 * {@link dev.pushservice.webhooks.WebhookService} (URL rule, secrets, transactions) →
 * {@link dev.pushservice.webhooks.WebhookRepository} (all SQL). Secrets are sealed by
 * {@code SecretBox} under {@code webhook:<id>:secret}; the raw secret exists in a create or rotate
 * answer and in the worker's memory while signing, nowhere else.
 *
 * <p><b>Facts in, deliveries out</b>: the worker role's {@link dev.pushservice.webhooks.WebhookDispatcher}
 * relays {@code lifecycle_events} into {@code webhook_deliveries} and claims due deliveries with
 * {@code FOR UPDATE SKIP LOCKED}. The relay follows transactions, not ids: each fact carries the id
 * of the transaction that wrote it, and a pass ({@link dev.pushservice.webhooks.WebhookRepository#relay},
 * one {@code INSERT … SELECT}) relays the facts of exactly the transactions that have finished since
 * the last pass, as the pass's snapshot sees them, and stores where it stopped (a transaction id
 * below which everything is relayed, and the transactions below it that were still running). So a
 * fact that commits late, out of id order, in a transaction of any size or length, is relayed once,
 * never skipped; ids are not used for ordering at all. The relay's row is locked with
 * {@code SKIP LOCKED} before the pass (a separate statement, so the pass's snapshot sees the last
 * holder's position): with several workers one relays and the others skip. The claim is fair: in
 * rounds across apps and, within an app, across endpoints, resuming where the last claim stopped
 * ({@link dev.pushservice.webhooks.WebhookRepository#claim}). A claimed attempt moves
 * {@code next_attempt_at} past a lease (twice the timeout plus 30 s): if its instance dies, the row
 * becomes due again (at-least-once).
 *
 * <p><b>Direct deliveries</b>: {@link dev.pushservice.webhooks.WebhookService#queueDirect} queues
 * deliveries of a kind to one named endpoint in the caller's transaction (a journey's webhook step,
 * kind {@code journey.webhook}); they are not facts of the outbox and need no subscription, and are
 * signed, retried and listed like every delivery.
 *
 * <p>Why a table of our own and not a db-scheduler task per delivery: the claim must be fair per
 * endpoint (at most N in flight per endpoint, others claimed past a saturated one), which a
 * db-scheduler poll cannot express; the delivery rows are also the visible attempt history
 * ({@code GET …/deliveries}) and disappear with their webhook ({@code on delete cascade}).
 *
 * <p>Invariants: the delivery id is the {@code webhook-id} header on every attempt and the body is
 * stored once and sent unchanged; a webhook gets only facts recorded after its creation
 * ({@code start_after_event}); no address outside {@link dev.pushservice.platform.net.TargetAddresses}'
 * rule is connected to unless {@code PUSH_WEBHOOKS_ALLOW_INSECURE}; a slow endpoint holds only its
 * own slots (one while its attempts are failing); an attempt holds no database connection while it
 * waits on HTTP (the dispatcher thread alone uses the database, one short transaction at a time, on
 * the API's pool: see {@code docs/architecture.md}); another app's webhook is a 404.
 */
package dev.pushservice.webhooks;
