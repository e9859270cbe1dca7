-- Per-notification recipient counts kept by the database (issue 29 item 3, issue 27's live report):
-- what GET /v1/notifications/{id}, the list, the dashboard's list and the report page of a running
-- notification read instead of a GROUP BY over every recipient row. They count exactly what
-- notification_recipient_states (V30) shows: every recipient row by platform, status and (for a
-- status other than pending and sending) its reason code, plus the recipients a handover lists that
-- have no row yet, as sending.
--
-- Append-only deltas: each statement that inserts or changes recipient rows adds one row per key its
-- rows moved to or from (+n, -n), grouped, in its own transaction: never a write per recipient, and no
-- upsert, so no row lock is taken. Claims and recordings of one notification run on several lanes and
-- instances at once, all moving recipients between the same few keys (pending, sending, accepted): an
-- upserted counter row would serialize them until each commit, and two transactions of several
-- statements (a record and a recordHanded; a reclaim, a claim and a frequency-cap skip) would lock the
-- same keys in different orders. V21's triggers keep locking only their delivery_daily_counts rows.
-- A key's count is the sum of its rows; a recurring task folds the rows of unfinished notifications
-- into one per key (NotificationCounts), so a read sums a handful; the finishing that stores a
-- notification's summary and report folds its rows a last time (reads use those from then on).
create table notification_counts (
    notification_id uuid   not null,
    app_id          uuid   not null,
    platform        text   not null,
    status          text   not null,
    -- last_error for a terminal status (the report's reason code), else null
    reason          text,
    count           bigint not null
);
create index notification_counts_notification_idx on notification_counts (notification_id);

-- Recipients accepted per second (of their updated_at when they became accepted): the report's
-- accepted timeline of a running notification, bucketed when read. Same deltas, same folding.
create table notification_accepted_counts (
    notification_id uuid   not null,
    app_id          uuid   not null,
    second          bigint not null,
    count           bigint not null
);
create index notification_accepted_counts_notification_idx on notification_accepted_counts (notification_id);

-- A recipient row inserted with an attempt counted, or pending/cancelled with a reason, is a handed
-- recipient getting its row (its outcome recorded, or its handover's lease ended): it stops counting as
-- its handover's sending entry. Every fan-out insert makes rows with no attempt, pending without a
-- reason or expired (with one); every handed row has its attempt counted (1, or more) except a
-- deferred one (its attempt given back), which is pending, or cancelled, with the deferral's reason.
-- Keep it so.
create function count_notification_recipients() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
        select notification_id, app_id, platform, status, reason, sum(n)
        from (select notification_id, app_id, platform, status,
                     case when status in ('pending', 'sending') then null else last_error end as reason, count(*) as n
              from new_rows group by 1, 2, 3, 4, 5
              union all
              select notification_id, app_id, platform, 'sending', null, -count(*)
              from new_rows
              where attempts > 0 or (last_error is not null and status in ('pending', 'cancelled'))
              group by 1, 2, 3) d
        group by 1, 2, 3, 4, 5
        having sum(n) <> 0;
        insert into notification_accepted_counts (notification_id, app_id, second, count)
        select notification_id, app_id, floor(extract(epoch from updated_at))::bigint, count(*)
        from new_rows where status = 'accepted'
        group by 1, 2, 3;
    else
        insert into notification_counts (notification_id, app_id, platform, status, reason, count)
        select notification_id, app_id, platform, status, reason, sum(n)
        from (select notification_id, app_id, platform, status,
                     case when status in ('pending', 'sending') then null else last_error end as reason, count(*) as n
              from new_rows group by 1, 2, 3, 4, 5
              union all
              select notification_id, app_id, platform, status,
                     case when status in ('pending', 'sending') then null else last_error end, -count(*)
              from old_rows group by 1, 2, 3, 4, 5) d
        group by 1, 2, 3, 4, 5
        having sum(n) <> 0;
        -- no statement rewrites an accepted row (V22), so this is a cheap look that finds nothing in old_rows
        insert into notification_accepted_counts (notification_id, app_id, second, count)
        select notification_id, app_id, second, sum(n)
        from (select notification_id, app_id, floor(extract(epoch from updated_at))::bigint as second, count(*) as n
              from new_rows where status = 'accepted' group by 1, 2, 3
              union all
              select notification_id, app_id, floor(extract(epoch from updated_at))::bigint, -count(*)
              from old_rows where status = 'accepted' group by 1, 2, 3) d
        group by 1, 2, 3
        having sum(n) <> 0;
    end if;
    return null;
end
$$;

-- Statement-level, on the table (a partitioned parent keeps them for every partition).
create trigger notification_recipients_counts_ins
    after insert on notification_recipients
    referencing new table as new_rows
    for each statement execute function count_notification_recipients();

create trigger notification_recipients_counts_upd
    after update on notification_recipients
    referencing old table as old_rows new table as new_rows
    for each statement execute function count_notification_recipients();

-- A handover's entries count as sending until each gets its row (counted off by the insert above).
-- Every path that deletes a handover inserts a row for each entry still without one in the same
-- statement (the recording of its last outcomes, the reclaim at its lease's end, the stranded sweep
-- of a cancelled notification), so a delete itself changes no count.
create function count_notification_handovers() returns trigger language plpgsql as $$
begin
    insert into notification_counts (notification_id, app_id, platform, status, reason, count)
    select o.notification_id, o.app_id, l.platform, 'sending', null, count(*)
    from new_rows o cross join lateral unnest(o.platforms) as l(platform)
    group by 1, 2, 3;
    return null;
end
$$;

create trigger notification_handovers_counts_ins
    after insert on notification_handovers
    referencing new table as new_rows
    for each statement execute function count_notification_handovers();

-- Existing databases: the notifications whose counts are read live (not terminal, or cancelled with
-- recipients in flight and no summary yet) get theirs from their rows now. The triggers above exist
-- already in this transaction and hold their tables' locks, so no write slips between them and this.
insert into notification_counts (notification_id, app_id, platform, status, reason, count)
select s.notification_id, s.app_id, s.platform, s.status,
       case when s.status in ('pending', 'sending') then null else s.last_error end, count(*)
from notifications n join notification_recipient_states s on s.notification_id = n.id and s.app_id = n.app_id
where n.status in ('draft', 'queued', 'processing') or (n.status = 'cancelled' and n.summary is null)
group by 1, 2, 3, 4, 5;

insert into notification_accepted_counts (notification_id, app_id, second, count)
select r.notification_id, r.app_id, floor(extract(epoch from r.updated_at))::bigint, count(*)
from notifications n join notification_recipients r on r.notification_id = n.id and r.app_id = n.app_id
where (n.status in ('draft', 'queued', 'processing') or (n.status = 'cancelled' and n.summary is null))
  and r.status = 'accepted'
group by 1, 2, 3;
