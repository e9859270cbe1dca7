/**
 * {@code GET /v1/analytics}: daily event metrics, delivery outcomes per day and outcome totals over
 * the last N days in the app's time zone, read from the counters the events feature
 * ({@link dev.pushservice.events.EventCounts}) and the notifications feature
 * ({@link dev.pushservice.notifications.DeliveryOutcomeCounts}) keep; it never scans events or
 * recipients.
 */
package dev.pushservice.analytics;
