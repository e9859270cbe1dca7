-- Engagement events submitted by clients (POST /v1/events). Append-only.
create table events (
    id              uuid        not null,
    app_id          uuid        not null references apps (id),
    event_type      text        not null,
    -- custom and outcome events carry a name
    event_name      text,
    device_id       uuid,
    -- the device's user when the event was recorded (for user-level targeting and journeys)
    user_id         uuid,
    notification_id uuid,
    metadata        jsonb,
    occurred_at     timestamptz not null,
    received_at     timestamptz not null default now(),
    primary key (app_id, id)
);
create index events_notification_idx on events (app_id, notification_id, occurred_at) where notification_id is not null;
create index events_app_occurred_idx on events (app_id, occurred_at);

-- The last time each device had each kind of event: what segment filters event.<type> and
-- custom_event.<name> read (exists / within_days need only the latest occurrence).
-- event_key is the event_type, or 'custom:<event_name>' for custom events.
create table device_event_last (
    app_id    uuid        not null,
    device_id uuid        not null,
    event_key text        not null,
    last_at   timestamptz not null,
    primary key (app_id, event_key, device_id)
);
create index device_event_last_device_idx on device_event_last (device_id);

-- Daily counts per app, day (in the app's time zone at ingest), event type and name: what
-- GET /v1/analytics reads, so a year of data is 365 x types rows, not a scan of events.
create table event_daily_counts (
    app_id     uuid    not null,
    day        date    not null,
    event_type text    not null,
    event_name text    not null default '',
    count      bigint  not null,
    primary key (app_id, day, event_type, event_name)
);
