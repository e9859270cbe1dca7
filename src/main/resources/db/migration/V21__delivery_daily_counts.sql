-- Delivery outcomes per app, day and outcome (a recipient's terminal status): what GET /v1/analytics
-- reads for its per-day delivery totals, so a year is 365 x outcomes rows, never a scan of recipients.
-- The day is the day of the recipient's updated_at (the service clock's instant of the change) in
-- the app's time zone at that moment; a later time zone change does not move past counts.
create table delivery_daily_counts (
    app_id  uuid   not null,
    day     date   not null,
    outcome text   not null,
    count   bigint not null,
    primary key (app_id, day, outcome)
);

-- Kept by statement-level triggers on notification_recipients: one grouped upsert per statement that
-- makes recipients terminal (a recorded delivery batch, a cancel, a platform without credentials, a
-- claim that leaves a recipient out), in that statement's transaction, whichever code path runs it.
-- Never a write per recipient. A row counts when its status moves from pending/sending to anything
-- else (every status but those two is terminal). Upserts are sorted by key, so concurrent
-- statements lock counter rows in one order.
create function count_recipient_outcomes() returns trigger language plpgsql as $$
begin
    if tg_op = 'UPDATE' then
        -- most statements (claims, retries) make nothing terminal: a cheap look first
        if not exists (select 1 from new_rows where status not in ('pending', 'sending')) then
            return null;
        end if;
        insert into delivery_daily_counts (app_id, day, outcome, count)
        select n.app_id, (n.updated_at at time zone a.timezone)::date, n.status, count(*)
        from new_rows n
             join old_rows o on o.notification_id = n.notification_id and o.device_id = n.device_id
             join apps a on a.id = n.app_id
        where n.status not in ('pending', 'sending') and o.status in ('pending', 'sending')
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (app_id, day, outcome) do update set count = delivery_daily_counts.count + excluded.count;
    else
        if not exists (select 1 from new_rows where status not in ('pending', 'sending')) then
            return null;
        end if;
        insert into delivery_daily_counts (app_id, day, outcome, count)
        select n.app_id, (n.updated_at at time zone a.timezone)::date, n.status, count(*)
        from new_rows n join apps a on a.id = n.app_id
        where n.status not in ('pending', 'sending')
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (app_id, day, outcome) do update set count = delivery_daily_counts.count + excluded.count;
    end if;
    return null;
end
$$;

create trigger notification_recipients_outcomes_upd
    after update on notification_recipients
    referencing old table as old_rows new table as new_rows
    for each statement execute function count_recipient_outcomes();

create trigger notification_recipients_outcomes_ins
    after insert on notification_recipients
    referencing new table as new_rows
    for each statement execute function count_recipient_outcomes();

-- recipients already terminal before this migration, counted once
insert into delivery_daily_counts (app_id, day, outcome, count)
select r.app_id, (r.updated_at at time zone a.timezone)::date, r.status, count(*)
from notification_recipients r join apps a on a.id = r.app_id
where r.status not in ('pending', 'sending')
group by 1, 2, 3;
