-- Changes made by a dashboard member (issue 27): the audit log names the member who made them
-- (actor 'member', member_id) as it names the API key of an API call. No foreign key: a member may be
-- removed later, and audit rows are never changed.
alter table audit_log drop constraint audit_log_actor_check;
alter table audit_log add constraint audit_log_actor_check check (actor in ('api_key', 'cli', 'system', 'member'));
alter table audit_log add column member_id uuid;
alter table audit_log add constraint audit_log_member_check check ((actor = 'member') = (member_id is not null));
