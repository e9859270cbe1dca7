/**
 * Engagement events submitted by clients ({@code POST /v1/events}) and the state derived from them.
 *
 * <p>Owns the tables {@code events} (append-only), {@code device_event_last} (the latest occurrence
 * of each event key per device, what segment filters read) and {@code event_daily_counts} (per-day
 * counters in the app's time zone, what analytics reads). All three are written together, in one
 * transaction per batch, by {@link dev.pushservice.events.EventWriter}: they never disagree, and an
 * event answered 202 is committed.
 *
 * <p>Other features react to the same insert without this package knowing them: V16's trigger writes
 * webhook facts, V26's trigger (owned by {@code journeys}) starts journey executions in the batch's
 * transaction. After a batch with custom events commits, the writer publishes
 * {@link dev.pushservice.events.CustomEventsCommitted} so listeners can hand the new work over at once.
 */
package dev.pushservice.events;
