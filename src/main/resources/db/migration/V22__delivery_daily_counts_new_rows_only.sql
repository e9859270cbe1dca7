-- V21's triggers also captured every updated row's old version (an OLD TABLE) to join it with the
-- new one, on every UPDATE of notification_recipients, claims included. In a 100,000-recipient
-- fan-out that doubled PostgreSQL's time per recording statement (pg_stat_statements: 14 ms against
-- 2.8 ms per batch of ~150). The join is not needed: every UPDATE of notification_recipients only
-- touches recipients that are not terminal yet (claims and cancels take pending/sending rows,
-- recording takes sending rows, the frequency cap takes rows its own claim just marked sending,
-- missing credentials take pending rows), so a row that is terminal in the NEW TABLE has just
-- become terminal. Keep it so: an UPDATE that rewrites a terminal recipient would count it twice.
create or replace function count_recipient_outcomes() returns trigger language plpgsql as $$
begin
    -- most statements (claims, retries) make nothing terminal: a cheap look first
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
    return null;
end
$$;

drop trigger notification_recipients_outcomes_upd on notification_recipients;
create trigger notification_recipients_outcomes_upd
    after update on notification_recipients
    referencing new table as new_rows
    for each statement execute function count_recipient_outcomes();
