-- Tenants: organisation -> apps -> API keys.
create table organisations (
    id                  uuid primary key,
    name                text        not null,
    -- null: the service default (PUSH_ACTIVE_DEVICE_LIMIT)
    active_device_limit integer     check (active_device_limit is null or active_device_limit >= 0),
    created_at          timestamptz not null default now()
);

create table apps (
    id         uuid primary key,
    org_id     uuid        not null references organisations (id),
    name       text        not null,
    timezone   text        not null default 'UTC',
    settings   jsonb       not null default '{}'::jsonb,
    created_at timestamptz not null default now()
);
create index apps_org_idx on apps (org_id);

-- Raw keys are never stored: only SHA-256(key). "hint" is the prefix and last 4 characters.
create table api_keys (
    id           uuid primary key,
    app_id       uuid        not null references apps (id),
    kind         text        not null check (kind in ('server', 'public')),
    name         text        not null,
    hint         text        not null,
    key_hash     bytea       not null unique,
    scopes       text[]      not null,
    created_at   timestamptz not null default now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    replaced_by  uuid references api_keys (id)
);
create index api_keys_app_idx on api_keys (app_id);

-- One-off facts about this installation (e.g. when it was bootstrapped).
create table service_state (
    key        text primary key,
    value      text        not null,
    updated_at timestamptz not null default now()
);

-- db-scheduler's table (PostgreSQL layout, with priorities).
create table scheduled_tasks (
    task_name            text                     not null,
    task_instance        text                     not null,
    task_data            bytea,
    execution_time       timestamp with time zone not null,
    picked               boolean                  not null,
    picked_by            text,
    last_success         timestamp with time zone,
    last_failure         timestamp with time zone,
    consecutive_failures int,
    last_heartbeat       timestamp with time zone,
    version              bigint                   not null,
    priority             smallint,
    primary key (task_name, task_instance)
);
create index execution_time_idx on scheduled_tasks (execution_time);
create index last_heartbeat_idx on scheduled_tasks (last_heartbeat);
create index priority_execution_time_idx on scheduled_tasks (priority desc, execution_time asc);

-- Jobs that exhausted their retries: kept for inspection and counted by /health.
create table dead_letter_jobs (
    id            bigserial primary key,
    task_name     text        not null,
    task_instance text        not null,
    attempts      integer     not null,
    last_error    text,
    failed_at     timestamptz not null default now()
);
create index dead_letter_jobs_failed_idx on dead_letter_jobs (failed_at);
