-- Journeys: versioned automation graphs (spec "Journey") and their durable executions.
-- See src/main/java/dev/pushservice/journeys/package-info.java.
--
-- The journey row holds what lists show and what the hot paths look up (current name, status,
-- version and the current version's trigger); every POST and PATCH adds an immutable row to
-- journey_versions, which is what an execution runs (journey_id, version).
create table journeys (
    id                 uuid primary key,
    app_id             uuid        not null references apps (id),
    name               text        not null,
    status             text        not null check (status in ('draft', 'active', 'paused', 'archived')),
    reentry_limit      integer     not null check (reentry_limit between 1 and 100),
    current_version    integer     not null default 1,
    -- the current version's trigger: 'custom_event' (trigger_event_name) or 'segment' (trigger_segment_id)
    trigger_type       text        not null check (trigger_type in ('custom_event', 'segment')),
    trigger_event_name text,
    trigger_segment_id uuid,
    created_at         timestamptz not null,
    updated_at         timestamptz not null,
    archived_at        timestamptz
);
create index journeys_app_created_idx on journeys (app_id, created_at desc, id);
-- event ingest looks up the active journeys an event name starts
create index journeys_event_trigger_idx on journeys (app_id, trigger_event_name)
    where status = 'active' and trigger_type = 'custom_event';
create index journeys_segment_trigger_idx on journeys (trigger_segment_id)
    where status = 'active' and trigger_type = 'segment';

create table journey_versions (
    journey_id    uuid        not null references journeys (id),
    version       integer     not null check (version >= 1),
    name          text        not null,
    status        text        not null,
    reentry_limit integer     not null,
    -- the validated definition as returned on reads: {trigger, start, nodes}
    definition    jsonb       not null,
    created_at    timestamptz not null,
    primary key (journey_id, version)
);

-- One row per user entry. status: active (its node is due at due_at), waiting (a wait or
-- wait_until timer: due at due_at), completed, cancelled, failed. (id, step) names one step: a
-- step's effects (a notification, a webhook delivery, a goal) commit in the same transaction that
-- moves the execution past it, so a retried step never repeats them.
create table journey_executions (
    id          uuid primary key,
    app_id      uuid        not null,
    journey_id  uuid        not null references journeys (id),
    version     integer     not null,
    user_id     uuid        not null,
    status      text        not null check (status in ('active', 'waiting', 'completed', 'cancelled', 'failed')),
    -- the node to run at due_at; null once ended
    node_id     text,
    step        integer     not null default 0,
    due_at      timestamptz,
    entered_at  timestamptz not null,
    updated_at  timestamptz not null,
    ended_at    timestamptz,
    last_error  text,
    foreign key (journey_id, version) references journey_versions (journey_id, version)
);
create index journey_executions_due_idx on journey_executions (due_at) where status in ('active', 'waiting');
create index journey_executions_journey_idx on journey_executions (journey_id, status);
create index journey_executions_user_idx on journey_executions (journey_id, user_id);

-- How many executions each user started per journey: reentry_limit is enforced by one upsert
-- (insert, or increment while below the limit) in the transaction that starts the execution.
create table journey_entries (
    journey_id uuid    not null references journeys (id),
    user_id    uuid    not null,
    entries    integer not null,
    primary key (journey_id, user_id)
);

-- Goals reached: one row per execution and goal node (stats count them per node).
create table journey_goals (
    execution_id uuid        not null references journey_executions (id),
    node_id      text        not null,
    app_id       uuid        not null,
    journey_id   uuid        not null,
    reached_at   timestamptz not null,
    primary key (execution_id, node_id)
);
create index journey_goals_journey_idx on journey_goals (journey_id, node_id);
