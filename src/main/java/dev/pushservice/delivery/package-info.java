/**
 * Delivery: the {@link dev.pushservice.delivery.PushProvider} contract that every provider
 * (APNs, FCM, Web Push) implements, its outcome {@link dev.pushservice.delivery.DeliveryResult}
 * with one list of {@link dev.pushservice.delivery.ReasonCode}s, the
 * {@link dev.pushservice.delivery.PushProviders} registry that picks a platform's provider, and
 * later the fan-out, chunks and retries that use them.
 *
 * <p>The delivery core sees only these types: it imports nothing from {@code apns/}, {@code fcm/}
 * or {@code webpush/}, and never switches on a platform to pick a provider.
 */
package dev.pushservice.delivery;
