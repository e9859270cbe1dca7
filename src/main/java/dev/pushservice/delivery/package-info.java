/**
 * Delivery: the {@link dev.pushservice.delivery.PushProvider} contract that every provider
 * (APNs, FCM, Web Push) implements, its outcome {@link dev.pushservice.delivery.DeliveryResult}
 * with one list of {@link dev.pushservice.delivery.ReasonCode}s, the
 * {@link dev.pushservice.delivery.PushProviders} registry that picks a platform's provider, and the
 * {@link dev.pushservice.delivery.DeliveryEngine} that sends due recipients through them: priority
 * lanes with their own threads, in-flight budgets and database connections, retries
 * ({@link dev.pushservice.delivery.RetryBackoff}), metrics. Durable state is behind
 * {@link dev.pushservice.delivery.DeliveryStore}, which the notifications feature implements.
 * Work reaches a lane two ways: claimed from the store, or handed straight over by a fan-out page
 * of this instance that inserted its recipients already leased to the lane
 * ({@link dev.pushservice.delivery.Handover}), which saves the claim's write per recipient.
 *
 * <p>A lane ({@code Lane}: the wiring, its budgets and the sending) is a few parts with one job each,
 * each documenting its threads and what it may block on: the {@code Claimer} (claim loop),
 * the {@code HandOverQueue}, the senders, the {@code Recorder}; shared by the lanes, the
 * {@link dev.pushservice.delivery.ProviderBreakers} (one circuit per app, platform and Web Push origin)
 * and, per lane and platform, the {@code OriginGates}.
 *
 * <p>The delivery core sees only these types: it imports nothing from {@code apns/}, {@code fcm/}
 * or {@code webpush/}, never switches on a platform to pick a provider, and never blocks a
 * provider's I/O thread.
 */
package dev.pushservice.delivery;
