-- Webhooks: endpoints with Standard Webhooks signing secrets (sealed by SecretBox), a durable delivery
-- queue read with FOR UPDATE SKIP LOCKED, and the relay cursor over lifecycle_events.
-- See src/main/java/dev/pushservice/webhooks/package-info.java.
create table webhooks (
    id                  uuid primary key,
    app_id              uuid        not null references apps (id),
    url                 text        not null,
    description         text,
    -- subscribed event kinds; '*' is every kind
    events              text[]      not null,
    enabled             boolean     not null,
    -- why the service disabled it (410, failing too long); null when enabled or disabled by the API
    disabled_reason     text,
    secret              bytea       not null,
    -- the secret before the last rotation, still signed with until previous_secret_until
    previous_secret     bytea,
    previous_secret_until timestamptz,
    -- facts with an id at or below this existed before the webhook did and are not delivered to it
    start_after_event   bigint      not null,
    -- first failed attempt of the current failure streak (null after a success)
    failing_since       timestamptz,
    created_at          timestamptz not null,
    updated_at          timestamptz not null
);
create index webhooks_app_idx on webhooks (app_id, created_at, id);
create index webhooks_enabled_idx on webhooks (app_id) where enabled;

create table webhook_deliveries (
    -- the webhook-id header: the same on every attempt
    id                  uuid primary key,
    app_id              uuid        not null,
    webhook_id          uuid        not null references webhooks (id) on delete cascade,
    -- the fact delivered (null for webhook.test)
    lifecycle_event_id  bigint,
    event_type          text        not null,
    -- the exact body sent on every attempt
    body                text        not null,
    status              text        not null check (status in ('pending', 'succeeded', 'failed')),
    attempts            integer     not null default 0,
    -- when the next attempt may start; a claimed attempt pushes it forward by a lease, so an attempt
    -- lost with its instance runs again (at-least-once)
    next_attempt_at     timestamptz not null,
    last_attempt_at     timestamptz,
    last_status_code    integer,
    last_error          text,
    last_latency_ms     integer,
    created_at          timestamptz not null,
    unique (webhook_id, lifecycle_event_id)
);
create index webhook_deliveries_due_idx on webhook_deliveries (webhook_id, next_attempt_at) where status = 'pending';
create index webhook_deliveries_recent_idx on webhook_deliveries (webhook_id, created_at desc);

-- one row: the highest lifecycle_events id the relay has turned into deliveries
create table webhook_relay (
    id      integer primary key check (id = 1),
    last_id bigint  not null
);
insert into webhook_relay (id, last_id) values (1, 0);

-- device.registered: one lifecycle fact per new device, in the registering transaction. An AFTER
-- INSERT row trigger fires only for a row actually inserted (register_device's "insert … on conflict
-- do nothing" of a known token inserts nothing), so re-registrations, the hot path, pay nothing; a
-- new device pays one extra insert into lifecycle_events.
create function devices_record_registered() returns trigger language plpgsql as $$
begin
    insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
    values (new.app_id, 'device.registered', new.id,
            jsonb_build_object('device_id', new.id, 'platform', new.platform), new.created_at);
    return null;
end;
$$;
create trigger devices_registered after insert on devices
    for each row execute function devices_record_registered();

-- event.<event_type> (event.received, event.opened, event.clicked, …): engagement facts, written by a
-- statement-level trigger, so EventWriter's one set-based insert per batch stays one statement and the
-- facts come with it in one more set-based insert. Only for apps with an enabled webhook subscribed to
-- the kind (or '*'): ingest without such a webhook writes no fact at all.
create function events_record_received() returns trigger language plpgsql as $$
begin
    insert into lifecycle_events (app_id, kind, subject_id, payload, occurred_at)
    select i.app_id, 'event.' || i.event_type, i.id,
           jsonb_strip_nulls(jsonb_build_object('event_id', i.id, 'event_type', i.event_type, 'event_name', i.event_name,
                                                'device_id', i.device_id, 'notification_id', i.notification_id,
                                                'occurred_at', i.occurred_at)),
           i.received_at
    from inserted i
    where exists (select 1 from webhooks w
                  where w.app_id = i.app_id and w.enabled
                    and ('event.' || i.event_type = any(w.events) or '*' = any(w.events)))
    order by i.received_at, i.id;
    return null;
end;
$$;
create trigger events_recorded after insert on events
    referencing new table as inserted
    for each statement execute function events_record_received();
