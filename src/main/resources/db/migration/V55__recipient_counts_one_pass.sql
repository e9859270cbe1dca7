-- One statement trigger per event on notification_recipients, reading its transition table once.
--
-- V21/V22 (delivery_daily_counts) and V46 (notification_counts, notification_accepted_counts) each
-- had their own statement triggers. PostgreSQL captures a statement's rows once for all of them, but
-- each function then read that capture again: on a recording INSERT, V46's read it three times
-- (grouped by status, the handed ones, the accepted ones) and V21's twice (a look, then grouped), each
-- read a hash aggregate over every row. perf of a 100,000-recipient fan-out (bench/README.md) put
-- reading the captured rows and aggregating them among the largest costs that a74a18e did not have.
--
-- Now each statement's rows are grouped once, by everything any count needs, into a handful of groups
-- (a recording batch: its notification, platform, status and reason, and one second of updated_at);
-- the three counts are written from those groups. What each counts is unchanged (V21, V22, V46):
-- delivery_daily_counts the rows that became terminal (every UPDATE only takes rows that are not
-- terminal yet: V22), notification_counts every row by platform, status and reason (+ for the new
-- version, - for the old), and a handed recipient's new row off its handover's sending entry;
-- notification_accepted_counts the accepted rows by second of updated_at. updated_at is grouped by its
-- second: a day in any time zone starts on a whole second, so the day of the second is the day of the
-- instant.

create or replace function count_notification_recipients() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        with g as materialized (
            select notification_id, app_id, platform, status,
                   case when status in ('pending', 'sending') then null else last_error end as reason,
                   attempts > 0 or (last_error is not null and status in ('pending', 'cancelled')) as handed,
                   date_trunc('second', updated_at) as at, count(*) as n
            from new_rows
            group by 1, 2, 3, 4, 5, 6, 7),
        counts as (
            insert into notification_counts (notification_id, app_id, platform, status, reason, count)
            select notification_id, app_id, platform, status, reason, sum(n)
            from (select notification_id, app_id, platform, status, reason, n from g
                  union all
                  select notification_id, app_id, platform, 'sending', null, -n from g where handed) d
            group by 1, 2, 3, 4, 5
            having sum(n) <> 0),
        accepted as (
            insert into notification_accepted_counts (notification_id, app_id, second, count)
            select notification_id, app_id, extract(epoch from at)::bigint, sum(n)
            from g where status = 'accepted'
            group by 1, 2, 3)
        insert into delivery_daily_counts (app_id, day, outcome, count)
        select g.app_id, (g.at at time zone a.timezone)::date, g.status, sum(g.n)
        from g join apps a on a.id = g.app_id
        where g.status not in ('pending', 'sending')
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (app_id, day, outcome) do update set count = delivery_daily_counts.count + excluded.count;
    else
        with g as materialized (
            select notification_id, app_id, platform, status,
                   case when status in ('pending', 'sending') then null else last_error end as reason,
                   date_trunc('second', updated_at) as at, count(*) as n
            from new_rows
            group by 1, 2, 3, 4, 5, 6),
        o as materialized (
            select notification_id, app_id, platform, status,
                   case when status in ('pending', 'sending') then null else last_error end as reason,
                   -- no statement rewrites an accepted row (V22): this finds none, but costs nothing more
                   case when status = 'accepted' then date_trunc('second', updated_at) end as at, count(*) as n
            from old_rows
            group by 1, 2, 3, 4, 5, 6),
        counts as (
            insert into notification_counts (notification_id, app_id, platform, status, reason, count)
            select notification_id, app_id, platform, status, reason, sum(n)
            from (select notification_id, app_id, platform, status, reason, n from g
                  union all
                  select notification_id, app_id, platform, status, reason, -n from o) d
            group by 1, 2, 3, 4, 5
            having sum(n) <> 0),
        accepted as (
            insert into notification_accepted_counts (notification_id, app_id, second, count)
            select notification_id, app_id, second, sum(n)
            from (select notification_id, app_id, extract(epoch from at)::bigint as second, n from g where status = 'accepted'
                  union all
                  select notification_id, app_id, extract(epoch from at)::bigint, -n from o where status = 'accepted') d
            group by 1, 2, 3
            having sum(n) <> 0)
        insert into delivery_daily_counts (app_id, day, outcome, count)
        select g.app_id, (g.at at time zone a.timezone)::date, g.status, sum(g.n)
        from g join apps a on a.id = g.app_id
        where g.status not in ('pending', 'sending')
        group by 1, 2, 3
        order by 1, 2, 3
        on conflict (app_id, day, outcome) do update set count = delivery_daily_counts.count + excluded.count;
    end if;
    return null;
end
$$;

-- V21/V22's triggers go: the function above counts their outcomes too.
drop trigger notification_recipients_outcomes_ins on notification_recipients;
drop trigger notification_recipients_outcomes_upd on notification_recipients;
drop function count_recipient_outcomes();
