/**
 * The web SDK served by the program: {@code GET /sdk/v1/push.js} (ES module) and
 * {@code GET /sdk/v1/push-sw.js} (service worker) are {@code sdk/web}'s files, copied into the jar
 * at build time; {@code GET /sdk/v1/demo} is a page that subscribes the browser in front of it and
 * sends it a test push. Unauthenticated and outside {@code /v1} (docs/web-sdk.md).
 */
package dev.pushservice.platform.sdk;
