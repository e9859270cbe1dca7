/**
 * Journeys: versioned automation graphs ({@link dev.pushservice.journeys.JourneyDefinition}) and their
 * durable executions (V23).
 *
 * <p>What must stay true:
 * <ul>
 *   <li>Every POST and PATCH writes a new immutable row of {@code journey_versions}; an execution
 *       runs the version it entered on to its end, whatever later versions say.</li>
 *   <li>An execution is one row of {@code journey_executions}. A worker claims due rows with
 *       {@code FOR UPDATE SKIP LOCKED} in batches and runs each one's nodes until it waits or ends,
 *       in the same transaction that records what the nodes did (a notification created, a webhook
 *       delivery queued, a goal recorded). A step is therefore done exactly once, or not at all
 *       when the transaction is lost; nothing is sent twice by a retry.</li>
 *   <li>Work is set-based per batch: no query per execution on the hot path.</li>
 *   <li>Timers ({@code wait}, {@code wait_until}) are the {@code due_at} column: durable, read through a
 *       partial index, so waiting executions cost the claim nothing.</li>
 *   <li>{@code reentry_limit} is enforced by one upsert on {@code journey_entries} in the transaction
 *       that starts the execution, so concurrent entries for one user cannot exceed it.</li>
 *   <li>Executions start in the transaction that makes them due: custom events through V26's statement
 *       trigger on {@code events} (in the event batch's transaction), segment entries in the statement
 *       of the batch of users that saw them ({@code JourneyEntries}); either way only for known users, and the
 *       worker is woken after the commit.</li>
 *   <li>Lifecycle facts ({@code journey.execution.started|completed|failed|cancelled},
 *       {@code journey.goal.reached}) commit with the change they describe: started where the row is
 *       created (V33's trigger), goals and ends in the worker's batch (one statement), cancelled in the
 *       archive's statement; only for apps with a webhook subscribed to them.</li>
 *   <li>A paused journey's executions are not claimed; they continue when it is active again. Archiving
 *       (PATCH or DELETE) cancels its active and waiting executions and keeps them for stats.</li>
 *   <li>Executions and goals are partitioned by month of the execution's id, a UUIDv7 of its entry time
 *       (V54, docs/storage.md): ids are made by SQL with {@code storage_uuid7}, never at random.
 *       Retention drops a month only once none of its executions is active or waiting. Stats never
 *       read the rows: they read the per-journey counts the database keeps in the transactions that
 *       change executions and goals ({@link dev.pushservice.journeys.JourneyCounts}), which outlive
 *       the dropped months.</li>
 * </ul>
 */
package dev.pushservice.journeys;
