-- The reconciler (notifications/NotificationReconciler.java) finishes notifications whose completion
-- was missed: a crash between a recording's commit and the finishing after it, a finishing that
-- failed, a fan-out task dead-lettered. It looks at unfinished notifications only: queued ones (whose
-- fan-out may have died before it began) and processing ones, a handful at any time, through this
-- partial index; cancelled ones still without their final counts (recipients were in flight at the
-- cancel) through the second; and at a fan-out's dead letter by its task instance (the notification's id).
create index notifications_unfinished_idx on notifications (status) where status in ('queued', 'processing');
create index notifications_cancelled_uncounted_idx on notifications (id) where status = 'cancelled' and summary is null;
create index dead_letter_jobs_task_idx on dead_letter_jobs (task_name, task_instance);
