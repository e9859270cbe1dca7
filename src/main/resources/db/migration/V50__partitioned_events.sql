-- Bounded storage, continued (see V49 and docs/storage.md): engagement events and the lifecycle
-- outbox become range-partitioned by time, so retention drops them a partition at a time.
--
-- events: weekly partitions by occurred_at. The API accepts an occurred_at at most 30 days back and 5
-- minutes ahead, so a batch lands in the current or a recent week, all kept (retention is months);
-- reads by app and time (analytics, exports, a notification's report) prune to the weeks they ask
-- for. The primary key becomes (app_id, id, occurred_at): ids are made by the service, never
-- supplied, so nothing relied on id alone being unique per app.
--
-- lifecycle_events: daily partitions by occurred_at (the service's clock when the fact was written).
-- The relay reads it by transaction id (V31) through each partition's xid index; nothing looks a fact
-- up by id alone. The primary key becomes (id, occurred_at); ids still come from the same sequence.
--
-- Rows from before this migration go to one partition per table below the current period, dropped
-- whole once the table's retention has passed since this migration.
insert into storage_partitioned_tables (parent, key_column, key_kind, period)
values ('events', 'occurred_at', 'time', 'week'),
       ('lifecycle_events', 'occurred_at', 'time', 'day');

select storage_convert('events', 'app_id, id, occurred_at', $convert$
    do $first$
    declare
        v_week timestamptz := storage_period_start('week', now());
    begin
        create table events_legacy (like events including defaults including constraints including storage);
        execute format('alter table events attach partition events_legacy for values from (minvalue) to (%s)',
                       storage_bound('time', v_week));
        insert into storage_partitions (name, parent, range_start, range_end, data_until)
        values ('events_legacy', 'events', null, v_week, now());
        perform storage_create_partition('events', v_week + make_interval(days => 7 * w))
        from generate_series(0, 2) as w;
    end
    $first$
$convert$);

select storage_convert('lifecycle_events', 'id, occurred_at', $convert$
    do $first$
    declare
        v_today timestamptz := storage_period_start('day', now());
    begin
        create table lifecycle_events_legacy (like lifecycle_events including defaults including constraints including storage);
        execute format('alter table lifecycle_events attach partition lifecycle_events_legacy for values from (minvalue) to (%s)',
                       storage_bound('time', v_today));
        insert into storage_partitions (name, parent, range_start, range_end, data_until)
        values ('lifecycle_events_legacy', 'lifecycle_events', null, v_today, now());
        perform storage_create_partition('lifecycle_events', v_today + make_interval(days => d))
        from generate_series(0, 7) as d;
    end
    $first$
$convert$);
