-- The organisation's audit log (issue 27): membership changes (invites made, members who joined or
-- were added by the admin CLI, setup links used, role changes, removals), written in the same
-- transaction as the change. A table of its own rather than a nullable app_id in audit_log: every
-- reader of audit_log (the app's audit export, the app's audit page) stays scoped by app with no new
-- case to get wrong, and an organisation's events are never an app's (docs/api-decisions.md).
-- Append-only like audit_log. No foreign keys: the log outlives the members it names.
create table org_audit_log (
    id             bigserial primary key,
    org_id         uuid        not null,
    occurred_at    timestamptz not null,
    actor          text        not null check (actor in ('member', 'cli', 'system')),
    member_id      uuid,
    action         text        not null,
    target_type    text        not null,
    target_id      text        not null,
    request_id     text,
    -- names of the fields that changed
    changed_fields text[]      not null default '{}',
    -- non-secret values that make the entry readable after the fact: the role (from and to), the
    -- target's address at the time; never a password, hash or link token
    details        jsonb       not null default '{}',
    check ((actor = 'member') = (member_id is not null))
);
create index org_audit_log_org_idx on org_audit_log (org_id, occurred_at desc, id desc);

create function org_audit_log_append_only() returns trigger language plpgsql as $$
begin
    raise exception 'org_audit_log is append-only: % refused', tg_op;
end
$$;
create trigger org_audit_log_no_change before update or delete on org_audit_log
    for each row execute function org_audit_log_append_only();
create trigger org_audit_log_no_truncate before truncate on org_audit_log
    for each statement execute function org_audit_log_append_only();
