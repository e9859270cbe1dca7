-- The report page's recipient figures of a finished notification (issue 27, docs/dashboard.md "Report
-- page"): stored once, when the notification reaches its terminal state with nothing in flight (with
-- its summary), so a view of a finished send no longer reads each of its recipient rows:
-- {"bucket": seconds, "outcomes": [[platform, status, last_error or null, count], ...],
--  "accepted": [[bucket start in epoch seconds, accepted], ...]}. Null for notifications that are not
-- finished yet and for those finished before this migration: the page computes those live.
-- Engagement (events) stays live; it is read through events_notification_idx (V3).
alter table notifications add column report jsonb;
