-- Audit log: one row per change made through an API key or the admin CLI, written in the same
-- transaction as the change. Append-only: the application has no UPDATE or DELETE path, and the
-- triggers below refuse them (and TRUNCATE) from anyone else too.
create table audit_log (
    id             bigserial primary key,
    app_id         uuid        not null,
    occurred_at    timestamptz not null,
    actor          text        not null check (actor in ('api_key', 'cli', 'system')),
    key_id         uuid,
    key_kind       text        check (key_kind in ('server', 'public')),
    action         text        not null,
    target_type    text        not null,
    target_id      text        not null,
    request_id     text,
    changed_fields text[]      not null default '{}'
);
create index audit_log_app_idx on audit_log (app_id, occurred_at, id);

create function audit_log_append_only() returns trigger language plpgsql as $$
begin
    raise exception 'audit_log is append-only: % refused', tg_op;
end
$$;
create trigger audit_log_no_change before update or delete on audit_log
    for each row execute function audit_log_append_only();
create trigger audit_log_no_truncate before truncate on audit_log
    for each statement execute function audit_log_append_only();

-- CSV export jobs. 'expired' is set by the clean-up task once the file is deleted; reads also show
-- a completed export past expires_at as expired before that happens.
create table exports (
    id             uuid primary key,
    app_id         uuid        not null references apps (id),
    type           text        not null check (type in ('audience', 'message', 'recipient', 'event', 'audit')),
    filters        jsonb       not null,
    status         text        not null check (status in ('pending', 'running', 'completed', 'failed', 'expired')),
    row_count      bigint      not null default 0,
    size_bytes     bigint,
    stored_bytes   bigint,
    chunk_count    integer,
    failure_reason text,
    attempts       integer     not null default 0,
    created_at     timestamptz not null,
    started_at     timestamptz,
    progress_at    timestamptz,
    completed_at   timestamptz,
    expires_at     timestamptz
);
create index exports_app_created_idx on exports (app_id, created_at desc, id desc);
create index exports_expiry_idx on exports (expires_at) where status = 'completed';

-- The gzip-compressed CSV file, in chunks of about 1 MiB, so every instance can serve it.
create table export_chunks (
    export_id uuid    not null references exports (id) on delete cascade,
    seq       integer not null,
    data      bytea   not null,
    primary key (export_id, seq)
);
