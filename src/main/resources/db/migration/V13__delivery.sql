-- Delivery claims due recipients per notification and platform (pending, or sending with an expired
-- lease after a crash: next_attempt_at holds the lease end while sending) and checks whether a
-- notification has anything left to send; one partial index serves both.
create index notification_recipients_work_idx on notification_recipients (notification_id, platform, next_attempt_at)
    where status in ('pending', 'sending');
-- superseded by the index above
drop index notification_recipients_due_idx;
-- the notifications a lane delivers: processing ones of its priority (a handful at any time)
create index notifications_processing_idx on notifications (priority) where status = 'processing';
