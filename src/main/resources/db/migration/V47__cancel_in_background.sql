-- A cancel answers at once: it marks the notification cancelled and leaves its pending recipients
-- to a background task (notifications/NotificationCancels.java) that cancels them in batches and
-- then records the notification.cancelled fact. "cancelling" is true from the cancel until that
-- task has finished; the reconciler finds the ones whose task is gone (dead-lettered) through the
-- partial index and schedules it again. Adding a column with a constant default rewrites nothing.
alter table notifications add column cancelling boolean not null default false;
create index notifications_cancelling_idx on notifications (id) where cancelling;
