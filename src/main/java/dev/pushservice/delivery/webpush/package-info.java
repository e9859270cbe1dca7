/**
 * Web Push delivery (RFC 8030 protocol, RFC 8291 {@code aes128gcm} message encryption, RFC 8292
 * VAPID). {@link dev.pushservice.delivery.webpush.WebPushProvider} is the
 * {@link dev.pushservice.delivery.PushProvider} for {@code web} devices; a device's token is its
 * browser subscription JSON ({@link dev.pushservice.delivery.webpush.WebPushSubscription});
 * each app signs with its own {@link dev.pushservice.delivery.webpush.VapidKeys}.
 *
 * <p>Invariants: subscription endpoints, keys and VAPID private keys never appear in a log line or
 * a result reason; every message is encrypted with a fresh sender key pair and salt; the crypto
 * runs on Amazon Corretto Crypto Provider where it loads ({@link
 * dev.pushservice.delivery.webpush.CryptoProviders}).
 */
package dev.pushservice.delivery.webpush;
