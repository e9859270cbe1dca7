-- Accepted outcomes of handed recipients stored per recording batch (issue 29: CPU per recipient).
--
-- A large send's recipients are nearly all handed over (V30) and accepted by their provider at their
-- first attempt. Each of them cost a notification_recipients row: ~20–24 µs of PostgreSQL per recipient
-- (the heap tuple, its primary-key entry, partition routing, the count trigger's transition table, and
-- ~390 bytes of WAL), the largest cost of a send left (docs/scaling.md, "Where a recipient's CPU goes").
-- Now a recording writes those recipients as one row here per handover and platform it holds: their
-- device ids, users, external ids and provider message ids as arrays, with the batch's time. Every
-- other outcome (failed, retried, deferred, expired, cancelled, and every recipient that was claimed
-- rather than handed) still gets its row in notification_recipients. Each recipient still has exactly
-- one place: its row, a batch, or (not recorded yet) its handover's lists.
--
-- The arrays are stored as the recorder binds them (no unnest, no sort): one row per handover and
-- platform of a recording batch. Idempotent as the rows are: the primary key (notification, list key,
-- first device) is the same when a recorder writes the same batch again (its commit went through but
-- the answer was lost), and ON CONFLICT DO NOTHING writes and counts nothing then. A handover's devices are in one handover only,
-- so a device's batch is found by (notification_id, handover_id) and then the array (the reclaim of an
-- expired handover and the reads of unrecorded handover entries leave those devices out), or by the
-- GIN index on device_ids (a recipient looked up by device).
--
-- The recipient list (GET /v1/notifications/{id}/recipients) is ordered by (list_key, device_id): a
-- row's list key is its device id, a handed recipient's (listed, or in a batch) is its handover's
-- smallest device id. A handover entry keeps its place when it becomes a batch member; only one whose
-- first attempt did not end accepted moves (forward) to its row's place. See docs/api-decisions.md.

-- The handover's smallest device id: where its recipients sit in the list order.
alter table notification_handovers add column list_key uuid;
-- (no min(uuid) before PostgreSQL 18: the text form under "C" orders as the uuid does)
update notification_handovers set list_key = (select min(x::text collate "C") from unnest(device_ids) as x)::uuid;
alter table notification_handovers alter column list_key set not null;

create table notification_recipient_batches (
    notification_id      uuid        not null,
    -- the handover's list_key, copied
    list_key             uuid        not null,
    -- the batch's first device, in the order it was recorded: with the list key, the batch's key (a
    -- recorder writing the same batch again writes the same key)
    first_device         uuid        not null,
    handover_id          bigint      not null,
    app_id               uuid        not null,
    platform             text        not null,
    -- when the outcomes were recorded: each member's updated_at
    recorded_at          timestamptz not null,
    -- the handover's page time and expiry: each member's due_at and expires_at
    due_at               timestamptz not null,
    expires_at           timestamptz,
    -- the members, position by position; a column where every member has null is null itself
    device_ids           uuid[]      not null,
    user_ids             uuid[],
    external_user_ids    text[],
    provider_message_ids text[],
    primary key (notification_id, list_key, first_device)
) partition by range (notification_id);
create table notification_recipient_batches_default partition of notification_recipient_batches default;
create index notification_recipient_batches_handover_idx on notification_recipient_batches (notification_id, handover_id);
create index notification_recipient_batches_devices_idx on notification_recipient_batches using gin (device_ids);

insert into storage_partitioned_tables (parent, key_column, key_kind, period)
values ('notification_recipient_batches', 'notification_id', 'uuid7', 'day');
select storage_create_partition('notification_recipient_batches', now() + make_interval(days => d))
from generate_series(0, 7) as d;

-- The counts a batch's members make, as count_notification_recipients (V55) makes them for handed rows
-- that became accepted: notification_counts +n accepted and -n off the handover's sending entry,
-- notification_accepted_counts by second, delivery_daily_counts by the app's day.
create function count_notification_recipient_batches() returns trigger language plpgsql as $$
begin
    with g as materialized (
        select notification_id, app_id, platform, date_trunc('second', recorded_at) as at,
               sum(cardinality(device_ids)) as n
        from new_rows
        group by 1, 2, 3, 4),
    counts as (
        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
        select g.notification_id, g.app_id, g.platform, s.status, null, sum(s.n)
        from g cross join lateral (values ('accepted', g.n), ('sending', -g.n)) as s(status, n)
        group by 1, 2, 3, 4),
    accepted as (
        insert into notification_accepted_counts (notification_id, app_id, second, count)
        select notification_id, app_id, extract(epoch from at)::bigint, sum(n)
        from g
        group by 1, 2, 3)
    insert into delivery_daily_counts (app_id, day, outcome, count)
    select g.app_id, (g.at at time zone a.timezone)::date, 'accepted', sum(g.n)
    from g join apps a on a.id = g.app_id
    group by 1, 2, 3
    order by 1, 2, 3
    on conflict (app_id, day, outcome) do update set count = delivery_daily_counts.count + excluded.count;
    return null;
end
$$;

create trigger notification_recipient_batches_counts
    after insert on notification_recipient_batches
    referencing new table as new_rows
    for each statement execute function count_notification_recipient_batches();

-- Every recipient as the API and exports show it: the rows; the handed recipients recorded accepted, one
-- per batch member; and the recipients handovers list that are neither, as sending. A handover's batch
-- members are left out of its entries by a hash anti-join (its batches' device ids hashed once per
-- handover; written as NOT IN, the subquery ran again for every entry).
create or replace view notification_recipient_states as
select r.notification_id, r.device_id, r.app_id, r.platform, r.external_user_id, r.status, r.attempts,
       r.last_error, r.provider_message_id, r.updated_at, r.due_at, r.expires_at
from notification_recipients r
union all
select o.notification_id, l.device_id, o.app_id, l.platform, l.external_user_id, 'sending', 1,
       null, null, o.created_at, o.created_at, o.expires_at
from notification_handovers o
cross join lateral (
    select l.device_id, l.platform, l.external_user_id
    from unnest(o.device_ids, o.platforms, o.external_user_ids) as l(device_id, platform, external_user_id)
    where not exists (select 1 from notification_recipient_batches b
                      cross join lateral unnest(b.device_ids) as m(device_id)
                      where b.notification_id = o.notification_id and b.handover_id = o.id
                        and m.device_id = l.device_id)) l
where not exists (select 1 from notification_recipients x
                  where x.notification_id = o.notification_id and x.device_id = l.device_id)
union all
select b.notification_id, m.device_id, b.app_id, b.platform, m.external_user_id, 'accepted', 1,
       null, m.provider_message_id, b.recorded_at, b.due_at, b.expires_at
from notification_recipient_batches b
cross join lateral unnest(b.device_ids, b.external_user_ids, b.provider_message_ids)
    as m(device_id, external_user_id, provider_message_id);
