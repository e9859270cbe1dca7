-- Notifications: immutable send requests with their snapshots (content after template resolution,
-- audience definition with the segment versions in use), one row per recipient device once the
-- fan-out has materialized the audience, and an outbox of lifecycle facts.
-- See src/main/java/dev/pushservice/notifications/package-info.java for the states and the seam
-- between fan-out (materialization) and delivery.
create table notifications (
    id                 uuid primary key,
    app_id             uuid        not null references apps (id),
    -- Idempotency-Key, unique per app; request_hash is SHA-256 of the canonical request body
    idempotency_key    text        not null,
    request_hash       bytea       not null,
    name               text,
    status             text        not null check (status in ('draft', 'queued', 'processing', 'completed', 'failed', 'cancelled')),
    priority           text        not null check (priority in ('transactional', 'high', 'normal', 'bulk')),
    interruption_level text        not null check (interruption_level in ('passive', 'active', 'time_sensitive', 'critical')),
    -- content snapshot after template resolution (placeholders kept; rendered per recipient at delivery)
    content            jsonb       not null,
    template_id        uuid,
    template_version   integer,
    -- audience snapshot: {"target":{…},"included":[{"segment_id","version","filter"}],"excluded":[…]}
    audience           jsonb       not null,
    ttl                integer     check (ttl between 0 and 2419200),
    local_delivery_time text,
    frequency_cap_override boolean not null default false,
    scheduled_at       timestamptz,
    -- devices created after this instant are not recipients (the creation instant, or scheduled_at)
    audience_at        timestamptz not null,
    created_at         timestamptz not null,
    queued_at          timestamptz,
    processing_at      timestamptz,
    finished_at        timestamptz,
    updated_at         timestamptz not null,
    -- fan-out progress: keyset cursor over devices (created_at desc, id), so a re-run resumes
    fanout_cursor_at   timestamptz,
    fanout_cursor_id   uuid,
    -- null until the fan-out has materialized every recipient
    recipient_count    integer,
    -- exact per-status and per-platform counts, written once the notification is terminal
    summary            jsonb
);
create unique index notifications_idempotency_idx on notifications (app_id, idempotency_key);
create index notifications_app_created_idx on notifications (app_id, created_at desc, id desc);
-- drafts by due time: what the due-drafts sweep reads every second
create index notifications_due_drafts_idx on notifications (scheduled_at) where status = 'draft';

-- One row per recipient device, written by the fan-out with INSERT … SELECT in pages. No foreign
-- keys: a page of thousands of rows would pay a lookup per row, and rows are only ever written for
-- devices and notifications of the same app by the fan-out itself.
create table notification_recipients (
    notification_id     uuid        not null,
    device_id           uuid        not null,
    app_id              uuid        not null,
    platform            text        not null,
    user_id             uuid,
    external_user_id    text,
    -- pending → (delivery) sending → accepted | failed | invalid_token; pending → cancelled | expired
    status              text        not null check (status in ('pending', 'sending', 'accepted', 'failed', 'invalid_token', 'cancelled', 'expired')),
    attempts            integer     not null default 0,
    -- a reason code, never a token or a provider's free text with one
    last_error          text,
    next_attempt_at     timestamptz not null,
    -- the recipient's render values (user tags and properties) frozen at materialization, only when
    -- the content has tags./properties. placeholders
    render_values       jsonb,
    provider_message_id text,
    updated_at          timestamptz not null,
    primary key (notification_id, device_id)
);
-- the delivery half claims due work with FOR UPDATE SKIP LOCKED through this index
create index notification_recipients_due_idx on notification_recipients (notification_id, next_attempt_at)
    where status = 'pending';

-- Outbox of lifecycle facts (notification created, queued, processing, completed, failed, cancelled;
-- device invalidated), written in the same transaction as the change. Webhooks and journeys read it
-- in id order with their own cursor; nothing here is updated.
create table lifecycle_events (
    id          bigserial primary key,
    app_id      uuid        not null,
    kind        text        not null,
    subject_id  uuid        not null,
    payload     jsonb       not null,
    occurred_at timestamptz not null
);
create index lifecycle_events_app_idx on lifecycle_events (app_id, id);
