/**
 * Delivery: the {@link dev.pushservice.delivery.PushProvider} contract that every provider
 * (APNs, FCM, Web Push) implements, and later the fan-out, chunks and retries that use it.
 * The delivery core sees only this contract: nothing in {@code apns/}, {@code fcm/} or
 * {@code webpush/} leaks into it.
 */
package dev.pushservice.delivery;
