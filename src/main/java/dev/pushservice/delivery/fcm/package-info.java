/**
 * FCM HTTP v1 delivery: {@link dev.pushservice.delivery.fcm.FcmProvider} sends one message per
 * {@code POST {base}/v1/projects/{project_id}/messages:send} over HTTP/2 with the shared
 * {@link dev.pushservice.delivery.http.PushHttpClient}, authenticated by OAuth2 access tokens minted from the app's service-account
 * JSON ({@link dev.pushservice.delivery.fcm.FcmCredentials}). Nothing here is visible to the delivery
 * core beyond the {@link dev.pushservice.delivery.PushProvider} contract.
 */
package dev.pushservice.delivery.fcm;
