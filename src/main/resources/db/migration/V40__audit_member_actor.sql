-- Changes made by a dashboard member (issue 27) are audited with the member as the actor: actor
-- 'member' and the member's id. No foreign key: the log outlives whatever it names, and it is
-- append-only (a member's removal must not need to touch it).
alter table audit_log drop constraint audit_log_actor_check;
alter table audit_log add constraint audit_log_actor_check check (actor in ('api_key', 'cli', 'system', 'member'));
alter table audit_log add column member_id uuid;
alter table audit_log add constraint audit_log_member_check check ((actor = 'member') = (member_id is not null));
-- the dashboard's audit page filters by action, newest first
create index audit_log_app_action_idx on audit_log (app_id, action, occurred_at desc, id desc);
