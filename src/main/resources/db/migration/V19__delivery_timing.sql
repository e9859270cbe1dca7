-- Delivery controls, timing: when each recipient becomes due and until when it may be sent
-- (local delivery time, quiet hours, throttling, TTL). See notifications/SendTimes.java and
-- docs/api-decisions.md "Delivery controls: timing".

-- due_at: the send time decided at materialization (local delivery time, quiet hours and the
-- throttle slot applied); next_attempt_at starts there and moves with retries and leases.
-- expires_at: when the recipient's TTL runs out (null: no TTL); it is never sent at or after it.
alter table notification_recipients
    add column due_at     timestamptz,
    add column expires_at timestamptz;

-- the latest due_at given to a recipient so far: the expected completion while the notification runs
alter table notifications add column last_due_at timestamptz;

-- one row per throttled app, locked by every fan-out page that takes send slots, so pages of
-- every notification and instance take the app's slots one after another
create table send_throttles (
    app_id uuid primary key references apps (id)
);

-- slots taken per app and minute: positions 0 .. used-1 of the minute's per_minute evenly spaced
-- positions are taken. Rows older than an hour are deleted by the pages that take slots.
create table send_throttle_minutes (
    app_id uuid        not null,
    minute timestamptz not null,
    used   integer     not null,
    primary key (app_id, minute)
);
