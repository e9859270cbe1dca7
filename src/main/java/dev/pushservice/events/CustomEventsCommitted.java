package dev.pushservice.events;

/**
 * Published (a Spring application event) by the event writer after a batch that held custom events
 * naming a device has committed: what such events start (journey executions, written by the
 * database in the batch's transaction) is now due. Listeners run on the writer's thread and must
 * return at once.
 *
 * @param count custom events with a device in the batch
 */
public record CustomEventsCommitted(int count) {
}
