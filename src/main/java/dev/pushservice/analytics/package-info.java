/**
 * {@code GET /v1/analytics}: daily event metrics and outcome totals over the last N days in the
 * app's time zone, read from the counters the events feature keeps
 * ({@link dev.pushservice.events.EventCounts}); it never scans the events themselves.
 */
package dev.pushservice.analytics;
