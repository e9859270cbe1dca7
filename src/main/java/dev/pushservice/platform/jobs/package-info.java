/**
 * Durable background work on db-scheduler (table {@code scheduled_tasks}).
 *
 * <p>A feature adds work by declaring a {@code com.github.kagkarlsson.scheduler.task.Task} bean
 * (usually built with {@code Tasks.oneTime(...)}); nothing else needs registering. It schedules
 * instances through the {@link com.github.kagkarlsson.scheduler.SchedulerClient} bean, which
 * exists in every role and joins the caller's transaction, so "insert the row and enqueue its
 * task" commits or rolls back as one. Inside a running task, schedule follow-up work through
 * {@code ExecutionContext.getSchedulerClient()}: that client wakes this instance's worker at once.
 *
 * <p>Only instances whose {@code PUSH_ROLES} include {@code worker} execute tasks. Task data is
 * stored as JSON (records are fine; they need not be {@code Serializable}), so a task's data type
 * must stay readable across upgrades: add fields, never rename or remove them while instances of
 * the task may be pending.
 *
 * <p>Retries: give a task {@link dev.pushservice.platform.jobs.DeadLetters#handler} as its failure
 * handler; when the attempts run out the instance is moved to {@code dead_letter_jobs}.
 */
package dev.pushservice.platform.jobs;
