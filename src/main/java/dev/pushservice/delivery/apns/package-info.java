/**
 * APNs delivery with Pushy: {@link dev.pushservice.delivery.apns.ApnsCredentials} (validated when
 * an app sets them), {@link dev.pushservice.delivery.apns.ApnsPayload} (message → APNs headers and
 * JSON) and {@link dev.pushservice.delivery.apns.ApnsProvider} (one long-lived client per app
 * credential, bounded in-flight requests). Nothing here is visible to the delivery core beyond the
 * {@link dev.pushservice.delivery.PushProvider} contract.
 */
package dev.pushservice.delivery.apns;
