-- Bounded storage, continued (issue 29 item 7; see V49 and docs/storage.md): journey executions and
-- the goals they reached become range-partitioned by execution id, in monthly ranges, and retention
-- (PUSH_RETENTION_JOURNEY_EXECUTIONS) drops a month of them once it has passed and none of that
-- month's executions is still active or waiting. A journey's stats (executions per status, goals per
-- node) are kept as counts that outlive the rows.
--
-- Execution ids are UUIDv7 from now on, made from the execution's entry time (storage_uuid7, V51), so
-- every statement that names an execution (the worker's writes by id, failing one, the goal insert by
-- (execution_id, node_id)) reaches one partition; journey_goals is keyed by execution_id with the same
-- ranges, so a month of goals goes with its executions. The foreign key from goals to executions is
-- dropped: it would forbid dropping an execution partition (as V52 did for webhook attempts).
--
-- Monthly, not weekly or daily: the worker's claim names no execution (it reads each active journey's
-- due executions through every partition's (journey_id, due_at) index), so fewer partitions mean a
-- cheaper claim on every poll; and executions wait for weeks, so a short partition would be held back
-- by its waiting executions about as long as a month is anyway. 90 days of retention keeps ~4 months.

-- 'month' periods, and a hook that keeps a partition past its retention while its rows are needed.
alter table storage_partitioned_tables drop constraint storage_partitioned_tables_period_check;
alter table storage_partitioned_tables add constraint storage_partitioned_tables_period_check
    check (period in ('day', 'week', 'month'));
-- held_by: a function (partition name) returning true while that partition's rows are still needed;
-- retention skips such a partition (and warns) and tries again at its next run. Null: never held.
alter table storage_partitioned_tables add column held_by text;

create function storage_period_length(p_period text) returns interval
    language sql immutable strict parallel safe
    return case p_period when 'day' then interval '1 day' when 'week' then interval '7 days' else interval '1 month' end;

-- As V49's, with periods of any length.
create or replace function storage_create_partition(p_parent text, p_at timestamptz) returns boolean
language plpgsql as $$
declare
    t       storage_partitioned_tables;
    v_start timestamptz;
    v_end   timestamptz;
    v_name  text;
    v_lo    text;
    v_hi    text;
begin
    select * into strict t from storage_partitioned_tables where parent = p_parent;
    v_start := storage_period_start(t.period, p_at);
    v_end := (v_start at time zone 'UTC' + storage_period_length(t.period)) at time zone 'UTC';
    v_name := p_parent || '_p' || to_char(v_start at time zone 'UTC', 'YYYYMMDD');
    if exists (select 1 from storage_partitions p
               where p.parent = p_parent
                 and (p.range_start is null or p.range_start < v_end)
                 and (p.range_end is null or p.range_end > v_start)) then
        return false;
    end if;
    v_lo := storage_bound(t.key_kind, v_start);
    v_hi := storage_bound(t.key_kind, v_end);
    execute format('create table %I (like %I including defaults including constraints including storage)', v_name, p_parent);
    execute format('with moved as (delete from %I where %I >= %s and %I < %s returning *) insert into %I select * from moved',
                   p_parent || '_default', t.key_column, v_lo, t.key_column, v_hi, v_name);
    execute format('alter table %I attach partition %I for values from (%s) to (%s)', p_parent, v_name, v_lo, v_hi);
    insert into storage_partitions (name, parent, range_start, range_end, data_until)
    values (v_name, p_parent, v_start, v_end, v_end);
    return true;
end
$$;

-- As V49's, with periods of any length.
create or replace function storage_create_partitions(p_from timestamptz, p_to timestamptz) returns integer
language plpgsql as $$
declare
    t       storage_partitioned_tables;
    v_at    timestamptz;
    v_count integer := 0;
begin
    for t in select * from storage_partitioned_tables order by parent loop
        v_at := storage_period_start(t.period, p_from);
        while v_at <= p_to loop
            if storage_create_partition(t.parent, v_at) then
                v_count := v_count + 1;
            end if;
            v_at := (v_at at time zone 'UTC' + storage_period_length(t.period)) at time zone 'UTC';
        end loop;
    end loop;
    return v_count;
end
$$;

-- Whether the partition's rows are still needed (its table's held_by says so); false for a table without one.
create function storage_partition_held(p_name text) returns boolean
language plpgsql as $$
declare
    v_held_by text;
    v_held    boolean;
begin
    select t.held_by into v_held_by
    from storage_partitions p join storage_partitioned_tables t on t.parent = p.parent
    where p.name = p_name;
    if v_held_by is null then
        return false;
    end if;
    execute format('select %s($1)', v_held_by::regproc) into v_held using p_name;
    return coalesce(v_held, false);
end
$$;

-- As V49's, and refuses (rolling the detach back) a partition still held: the maintenance task asks
-- before it drops, without a lock; this asks again once the detach holds the parent's ACCESS EXCLUSIVE
-- lock, so no write between the two can slip a needed row in.
create or replace function storage_drop_partition(p_name text) returns void
language plpgsql as $$
declare
    v_parent text;
begin
    select parent into strict v_parent from storage_partitions where name = p_name;
    execute format('alter table %I detach partition %I', v_parent, p_name);
    if storage_partition_held(p_name) then
        raise exception 'partition % is still needed', p_name using errcode = 'object_in_use';
    end if;
    execute format('drop table %I', p_name);
    delete from storage_partitions where name = p_name;
end
$$;

-- A partition of journey_executions or journey_goals is needed while an execution of its range (the
-- journey_executions partition with the same bounds) is active or waiting: the worker will still
-- update it, and record its goals once (the goals' primary key is what makes a second reach no goal).
-- One probe of that partition's (due_at) index, which holds only active and waiting executions.
create function journey_partition_running(p_name text) returns boolean
language plpgsql as $$
declare
    p         storage_partitions;
    v_exec    text;
    v_running boolean;
begin
    select * into p from storage_partitions where name = p_name;
    if not found then
        return false;
    end if;
    select e.name into v_exec from storage_partitions e
    where e.parent = 'journey_executions'
      and e.range_start is not distinct from p.range_start and e.range_end is not distinct from p.range_end;
    if v_exec is null then
        return false;
    end if;
    execute format('select exists (select 1 from %I where status in (''active'', ''waiting''))', v_exec) into v_running;
    return v_running;
end
$$;

-- Counts that outlive the rows: GET /v1/journeys/{id}/stats and the lists read these, not the rows.
-- Append-only deltas as V46's notification counts: each statement that inserts or changes executions
-- (goals) adds one grouped row per key its rows moved to or from (+n, -n), in its own transaction,
-- taking no row lock, so concurrent event batches starting executions of one journey and the worker's
-- batches never wait for one another on a counter. A key's count is the sum of its rows; the recurring
-- task journey-counts-fold (JourneyCounts) folds them into one row per key.
create table journey_execution_counts (
    journey_id uuid   not null,
    app_id     uuid   not null,
    status     text   not null,
    count      bigint not null
);
create index journey_execution_counts_journey_idx on journey_execution_counts (journey_id);

create table journey_goal_counts (
    journey_id uuid   not null,
    app_id     uuid   not null,
    node_id    text   not null,
    count      bigint not null
);
create index journey_goal_counts_journey_idx on journey_goal_counts (journey_id);

-- goals → executions: would forbid dropping (and, here, converting) journey_executions
alter table journey_goals drop constraint journey_goals_execution_id_fkey;

insert into storage_partitioned_tables (parent, key_column, key_kind, period, held_by) values
    ('journey_executions', 'id', 'uuid7', 'month', 'journey_partition_running'),
    ('journey_goals', 'execution_id', 'uuid7', 'month', 'journey_partition_running');

-- Rows from before this migration (random ids) go to partitions of their own as in V49 (below this
-- month's UUIDv7 floor, and from ten years ahead up), whose data_until is now: dropped whole once
-- retention has passed since this migration and none of their executions is still running. The few
-- whose random id falls in the coming ten years land in their month's partition (or the default one
-- until it is created) and leave with it.
select storage_convert('journey_executions', 'id', $convert$
    do $first$
    declare
        v_month timestamptz := storage_period_start('month', now());
    begin
        create table journey_executions_legacy (like journey_executions including defaults including constraints including storage);
        execute format('alter table journey_executions attach partition journey_executions_legacy for values from (minvalue) to (%s)',
                       storage_bound('uuid7', v_month));
        create table journey_executions_legacy_high (like journey_executions including defaults including constraints including storage);
        execute format('alter table journey_executions attach partition journey_executions_legacy_high for values from (%s) to (maxvalue)',
                       storage_bound('uuid7', v_month + interval '3653 days'));
        insert into storage_partitions (name, parent, range_start, range_end, data_until) values
            ('journey_executions_legacy', 'journey_executions', null, v_month, now()),
            ('journey_executions_legacy_high', 'journey_executions', v_month + interval '3653 days', null, now());
        perform storage_create_partition('journey_executions', (v_month at time zone 'UTC' + make_interval(months => m)) at time zone 'UTC')
        from generate_series(0, 1) as m;
    end
    $first$
$convert$);

select storage_convert('journey_goals', 'execution_id, node_id', $convert$
    do $first$
    declare
        v_month timestamptz := storage_period_start('month', now());
    begin
        create table journey_goals_legacy (like journey_goals including defaults including constraints including storage);
        execute format('alter table journey_goals attach partition journey_goals_legacy for values from (minvalue) to (%s)',
                       storage_bound('uuid7', v_month));
        create table journey_goals_legacy_high (like journey_goals including defaults including constraints including storage);
        execute format('alter table journey_goals attach partition journey_goals_legacy_high for values from (%s) to (maxvalue)',
                       storage_bound('uuid7', v_month + interval '3653 days'));
        insert into storage_partitions (name, parent, range_start, range_end, data_until) values
            ('journey_goals_legacy', 'journey_goals', null, v_month, now()),
            ('journey_goals_legacy_high', 'journey_goals', v_month + interval '3653 days', null, now());
        perform storage_create_partition('journey_goals', (v_month at time zone 'UTC' + make_interval(months => m)) at time zone 'UTC')
        from generate_series(0, 1) as m;
    end
    $first$
$convert$);

-- The counts: statement-level triggers on the partitioned parents (every partition's writes).
create function count_journey_executions() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into journey_execution_counts (journey_id, app_id, status, count)
        select journey_id, app_id, status, count(*) from new_rows group by 1, 2, 3;
    else
        insert into journey_execution_counts (journey_id, app_id, status, count)
        select journey_id, app_id, status, sum(n)
        from (select journey_id, app_id, status, count(*) as n from new_rows group by 1, 2, 3
              union all
              select journey_id, app_id, status, -count(*) from old_rows group by 1, 2, 3) d
        group by 1, 2, 3
        having sum(n) <> 0;
    end if;
    return null;
end
$$;
create trigger journey_executions_counts_ins
    after insert on journey_executions
    referencing new table as new_rows
    for each statement execute function count_journey_executions();
create trigger journey_executions_counts_upd
    after update on journey_executions
    referencing old table as old_rows new table as new_rows
    for each statement execute function count_journey_executions();

create function count_journey_goals() returns trigger language plpgsql as $$
begin
    insert into journey_goal_counts (journey_id, app_id, node_id, count)
    select journey_id, app_id, node_id, count(*) from new_rows group by 1, 2, 3;
    return null;
end
$$;
create trigger journey_goals_counts_ins
    after insert on journey_goals
    referencing new table as new_rows
    for each statement execute function count_journey_goals();

-- Existing databases: the counts of the rows there are. The conversion holds both tables' locks until
-- this migration commits, so no write slips between the triggers above and these.
insert into journey_execution_counts (journey_id, app_id, status, count)
select journey_id, app_id, status, count(*) from journey_executions group by 1, 2, 3;
insert into journey_goal_counts (journey_id, app_id, node_id, count)
select journey_id, app_id, node_id, count(*) from journey_goals group by 1, 2, 3;

-- Custom-event entries make UUIDv7 execution ids of their entry time (V28's function otherwise
-- unchanged), so an execution lands in the month it entered.
create or replace function journeys_start_from_events() returns trigger language plpgsql as $$
begin
    if not exists (select 1 from journeys where status = 'active' and trigger_type = 'custom_event') then
        return null;
    end if;
    with live as materialized (
        select j.id, j.app_id, j.current_version, j.reentry_limit, j.trigger_event_name
        from journeys j
        where j.status = 'active' and j.trigger_type = 'custom_event'
          and (j.app_id, j.trigger_event_name) in (
              select i.app_id, i.event_name from inserted i where i.event_type = 'custom')
        -- one lock order for every writer
        order by j.id
        for key share of j
    ), wanted as (
        select j.id as journey_id, j.app_id, j.current_version, j.reentry_limit, i.user_id,
               count(*)::integer as asked, max(i.received_at) as entered_at
        from inserted i
        join live j on j.app_id = i.app_id and j.trigger_event_name = i.event_name
        -- a known user: named by the app (an anonymous user is only its one device's owner)
        join users u on u.id = i.user_id and u.external_user_id is not null
        where i.event_type = 'custom'
        group by j.id, j.app_id, j.current_version, j.reentry_limit, i.user_id
    ), granted as (
        insert into journey_entries as e (journey_id, user_id, entries, last_granted)
        select journey_id, user_id, least(asked, reentry_limit), least(asked, reentry_limit)
        from wanted
        -- one lock order for every writer: concurrent batches never deadlock on these rows
        order by journey_id, user_id
        on conflict (journey_id, user_id) do update
            set entries = least(e.entries + excluded.entries, (select reentry_limit from journeys where id = e.journey_id)),
                last_granted = least(e.entries + excluded.entries, (select reentry_limit from journeys where id = e.journey_id))
                               - e.entries
            where e.entries < (select reentry_limit from journeys where id = e.journey_id)
        returning e.journey_id, e.user_id, e.last_granted
    )
    insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step,
                                    due_at, entered_at, updated_at)
    select storage_uuid7(w.entered_at, null), w.app_id, w.journey_id, w.current_version, w.user_id, 'active', v.start_node, 0,
           w.entered_at, w.entered_at, w.entered_at
    from granted g
    join wanted w on w.journey_id = g.journey_id and w.user_id = g.user_id
    join journey_versions v on v.journey_id = w.journey_id and v.version = w.current_version
    cross join lateral generate_series(1, g.last_granted);
    return null;
end;
$$;
