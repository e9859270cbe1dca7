-- Unleased handovers: the part of a fan-out page that the fan-out's own lane does not take waits for
-- any worker's lane as one handover per platform, instead of as a pending row per recipient (issue 29:
-- a send spread over several workers).
--
-- Before, with N workers alive, a page handed 1/N of its devices to its own instance's lane (a leased
-- handover) and inserted the rest as pending notification_recipients rows that every worker claimed one
-- by one: three writes per recipient (the insert, the claim's update, the outcome's update) against one
-- handover entry and a share of a batch row for the fan-out's own share. Two workers spent about twice
-- the CPU per recipient of one (bench/README.md, "scale.sh 10000000 and spread.sh after V58").
-- Now that rest is written as handovers with no lease (lease_until null), one per platform, and a
-- worker's claimer leases whole handovers of its lane and platform as its hand-over room frees: from
-- then on they are handed recipients like the fan-out's own (their outcomes recorded per batch, their
-- lease reclaimed if that worker dies).
--
-- An unleased handover's entries are pending (no attempt yet): counted pending when inserted, and moved
-- to sending by the statement that leases them (it writes those counts itself). The reclaim of expired
-- leases never sees them (lease_until <= now is not true of null). Cancelling a notification turns its
-- unleased handovers into cancelled rows (CancelRepository), and the delete of an unleased handover
-- takes its entries off pending here, so every path that deletes one only has to insert the rows.

alter table notification_handovers alter column lease_until drop not null;
-- the platform of every entry of an unleased handover (its lease statement reads one platform's); null
-- for a leased handover written by a fan-out page for its own lane (mixed platforms)
alter table notification_handovers add column platform text;

-- what a claimer's lease walks: the unleased handovers of a notification and platform, oldest first
create index notification_handovers_unleased_idx on notification_handovers (notification_id, platform, id)
    where lease_until is null;
-- the recipient list's walk over a notification's handovers in list order (many when a send is spread)
create index notification_handovers_list_idx on notification_handovers (notification_id, list_key);

create or replace function count_notification_handovers() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
        select o.notification_id, o.app_id, l.platform,
               case when o.lease_until is null then 'pending' else 'sending' end, null, count(*)
        from new_rows o cross join lateral unnest(o.platforms) as l(platform)
        group by 1, 2, 3, 4;
    else
        -- DELETE: an unleased handover's entries leave pending (the deleting statement inserts their rows,
        -- which count themselves); a leased one's rows were counted off sending by the row trigger
        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
        select o.notification_id, o.app_id, l.platform, 'pending', null, -count(*)
        from old_rows o cross join lateral unnest(o.platforms) as l(platform)
        where o.lease_until is null
        group by 1, 2, 3;
    end if;
    return null;
end
$$;

create trigger notification_handovers_counts_del
    after delete on notification_handovers
    referencing old table as old_rows
    for each statement execute function count_notification_handovers();

-- Every recipient as the API and exports show it (V58), an unleased handover's entries as pending with no
-- attempt.
create or replace view notification_recipient_states as
select r.notification_id, r.device_id, r.app_id, r.platform, r.external_user_id, r.status, r.attempts,
       r.last_error, r.provider_message_id, r.updated_at, r.due_at, r.expires_at
from notification_recipients r
union all
select o.notification_id, l.device_id, o.app_id, l.platform, l.external_user_id,
       case when o.lease_until is null then 'pending' else 'sending' end,
       case when o.lease_until is null then 0 else 1 end,
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
