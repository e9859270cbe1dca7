/**
 * The HTTP client the FCM and Web Push providers send with: {@link
 * dev.pushservice.delivery.http.PushHttpClient}, HTTP/2 (multiplexed, pooled per origin) where the
 * server offers it, HTTP/1.1 otherwise, on Netty. It knows nothing about push protocols; what a
 * status means is each provider's business. Failures carry descriptions that never name the URL,
 * since Web Push endpoints are capabilities.
 */
package dev.pushservice.delivery.http;
