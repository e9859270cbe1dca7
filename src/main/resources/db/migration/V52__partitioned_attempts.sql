-- Attempt histories (issue 27: the recipient timeline and webhook deliveries show every attempt).
-- A row only for an attempt that did not end its recipient or delivery (retries, deferrals behind an
-- open circuit); the attempt that ends it is the recipient's (delivery's) own row. Partitioned like the
-- rows they describe, so retention drops them with their day (recipients) or week (webhook
-- deliveries) and never deletes row by row: delivery_attempts by notification id (UUIDv7, daily, as
-- notification_recipients), webhook_delivery_attempts by delivery id (UUIDv7, weekly, as
-- webhook_deliveries), with the retention of those rows (PUSH_RETENTION_RECIPIENTS,
-- PUSH_RETENTION_WEBHOOK_DELIVERIES). No foreign key to webhook_deliveries: it would forbid dropping a
-- delivery partition. Attempts of rows whose ids are older than UUIDv7 (made before V49/V51) land in
-- the default partition, which retention does not drop: only retries of recipients and deliveries
-- that were in flight across the upgrade.
create table delivery_attempts (
    notification_id uuid        not null,
    device_id       uuid        not null,
    app_id          uuid        not null,
    at              timestamptz not null,
    -- the attempt's number as the recipient counted it (a deferral repeats the number: it was given back)
    attempt         smallint    not null,
    -- retry: sent and failed transiently, tried again later; deferred: never sent (its provider's
    -- circuit was open: an outage or a rate limit), put back without costing an attempt
    outcome         text        not null check (outcome in ('retry', 'deferred')),
    -- a reason code (docs/api-decisions.md, "Delivery mapping")
    reason          text        not null,
    -- the provider's HTTP status when it answered one (null: no answer, or not an HTTP status)
    http_status     smallint
) partition by range (notification_id);
create table delivery_attempts_default partition of delivery_attempts default;
create index delivery_attempts_recipient_idx on delivery_attempts (notification_id, device_id, at);

create table webhook_delivery_attempts (
    delivery_id     uuid        not null,
    at              timestamptz not null,
    attempt         smallint    not null,
    -- the endpoint's HTTP status; null when it gave none (then `error` says why: timeout, connection_refused, …)
    status_code     smallint,
    error           text,
    latency_ms      integer
) partition by range (delivery_id);
create table webhook_delivery_attempts_default partition of webhook_delivery_attempts default;
create index webhook_delivery_attempts_delivery_idx on webhook_delivery_attempts (delivery_id, at);

insert into storage_partitioned_tables (parent, key_column, key_kind, period) values
    ('delivery_attempts', 'notification_id', 'uuid7', 'day'),
    ('webhook_delivery_attempts', 'delivery_id', 'uuid7', 'week');
select storage_create_partition('delivery_attempts', now() + make_interval(days => d)) from generate_series(0, 7) as d;
select storage_create_partition('webhook_delivery_attempts', now() + make_interval(days => 7 * w)) from generate_series(0, 1) as w;
