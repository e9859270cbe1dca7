-- Attempt history (issue 27, docs/dashboard.md "Recipient timeline", "Webhooks"): one row per
-- attempt that did NOT end its recipient or webhook delivery. The attempt that ends it is the
-- recipient's (or the delivery's) own row, so a recipient accepted at its first attempt, the common
-- case, writes nothing here: the hot path keeps its one statement per chunk, and these rows are
-- written by that same statement (a CTE over the rows it updated or inserted), never one per row.
--
-- No foreign keys, like notification_recipients (V12): a chunk of retries would pay a lookup per
-- row. Rows are small: three ids, a couple of short numbers and a reason code, never a token nor a
-- provider's free text. `at` is when the attempt was recorded: the key for time partitioning and
-- retention, and the timeline's order.
create table delivery_attempts (
    notification_id uuid        not null,
    device_id       uuid        not null,
    app_id          uuid        not null,
    at              timestamptz not null,
    -- the attempt's number as the recipient counted it (a deferral repeats the number: it was given back)
    attempt         smallint    not null,
    -- retry: sent and failed transiently, tried again later; deferred: never sent (its provider's
    -- circuit was open: an outage or a rate limit), put back without costing an attempt. The lane's
    -- own gate giving a send back for want of room at its origin (origin_busy) is no attempt: no row
    outcome         text        not null check (outcome in ('retry', 'deferred')),
    -- a reason code (docs/api-decisions.md, "Delivery mapping")
    reason          text        not null,
    -- the provider's HTTP status when it answered one (null: no answer, or not an HTTP status)
    http_status     smallint
);
-- one recipient's attempts, in time order
create index delivery_attempts_recipient_idx on delivery_attempts (notification_id, device_id, at);

create table webhook_delivery_attempts (
    -- no foreign key: webhook_deliveries is partitioned (V51), and both tables lose their rows by
    -- partition with retention (V52), never row by row
    delivery_id     uuid        not null,
    at              timestamptz not null,
    attempt         smallint    not null,
    -- the endpoint's HTTP status; null when it gave none (then `error` says why: timeout, connection_refused, …)
    status_code     smallint,
    error           text,
    latency_ms      integer
);
create index webhook_delivery_attempts_delivery_idx on webhook_delivery_attempts (delivery_id, at);
