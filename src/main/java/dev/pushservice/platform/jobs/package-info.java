/**
 * Durable background work on db-scheduler, split by the {@code PUSH_ROLES} that run it.
 *
 * <h2>Work (role {@code worker}, table {@code scheduled_tasks})</h2>
 * A feature adds work by declaring a {@code com.github.kagkarlsson.scheduler.task.Task} bean
 * (usually built with {@code Tasks.oneTime(...)}); nothing else needs registering. It schedules
 * instances, due now or at a later time, through the {@link com.github.kagkarlsson.scheduler.SchedulerClient}
 * bean, which exists in every role and joins the caller's transaction, so "insert the row and
 * enqueue its task" commits or rolls back as one. Inside a running work task, schedule follow-up
 * work through {@code ExecutionContext.getSchedulerClient()}: that client wakes this instance's
 * worker at once. Only instances whose {@code PUSH_ROLES} include {@code worker} execute work.
 *
 * <h2>Recurring tasks (role {@code scheduler}, table {@code recurring_tasks})</h2>
 * Clean-ups, and sweeps that find work that has come due and enqueue it for workers, are
 * {@code Tasks.recurring(...)} beans. Only {@code scheduler} instances know them: they create each
 * recurring task's execution at start if it is missing and run it. That is safe with several
 * scheduler instances, by db-scheduler's design ("guarantees execution by single scheduler
 * instance"): a recurring task is one row (name, {@code "recurring"}), an instance picks a due row
 * with {@code FOR UPDATE SKIP LOCKED} and marks it picked, so exactly one instance runs it, and on
 * completion moves it to the next time of its schedule; the start-up insert is an insert-if-absent
 * that tolerates another instance doing the same. A scheduler that dies mid-run has the execution
 * revived by another after its heartbeat goes stale. A recurring task must be short and must hand
 * heavy work to workers: enqueue it with the {@code SchedulerClient} bean (not
 * {@code ExecutionContext.getSchedulerClient()}, which points at {@code recurring_tasks}).
 *
 * <p>Two tables, because a db-scheduler instance must know every task in the table it polls: an
 * execution of a task it does not know is "unresolved", skipped by it, and deleted after
 * {@code db-scheduler.delete-unresolved-after}. With one table, a scheduler-only instance would end up
 * deleting queued work, and a worker-only one recurring tasks.
 *
 * <h2>Not here</h2>
 * The event writers ({@code events}) drain an in-memory queue of events this instance accepted over
 * HTTP: they are part of the {@code api} role's request path, not durable background work, and
 * run wherever the API runs.
 *
 * <h2>Task data and retries</h2>
 * Task data is stored as JSON (records are fine; they need not be {@code Serializable}), so a
 * task's data type must stay readable across upgrades: add fields, never rename or remove them
 * while instances of the task may be pending. Give a work task
 * {@link dev.pushservice.platform.jobs.DeadLetters#handler} as its failure handler; when the
 * attempts run out the instance is moved to {@code dead_letter_jobs}. A recurring task that fails
 * simply runs again at its next scheduled time.
 */
package dev.pushservice.platform.jobs;
