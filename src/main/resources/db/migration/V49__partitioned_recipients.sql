-- Bounded storage (issue 29, item 7): the high-volume tables become range-partitioned by time, and
-- retention drops whole partitions (DROP TABLE: no row-by-row delete, nothing for VACUUM to clean).
-- See docs/storage.md for the choice of keys and the settings; platform/storage/PartitionMaintenance
-- creates partitions ahead and drops expired ones.
--
-- This migration adds the machinery (a registry of partitions and the functions that create, drop
-- and convert) and converts notification_recipients; V50 converts events and lifecycle_events, V51
-- webhook_deliveries.

-- The partitioned tables: the key column, what it holds (a time, or a time-ordered UUIDv7 whose first
-- 48 bits are the Unix time in milliseconds) and the length of one partition.
create table storage_partitioned_tables (
    parent     text primary key,
    key_column text not null,
    key_kind   text not null check (key_kind in ('uuid7', 'time')),
    period     text not null check (period in ('day', 'week'))
);

-- Every partition but the default one. range_start/range_end are its bounds as instants (null: from
-- the lowest / to the highest key); data_until is the latest time a row in it can be about: retention
-- drops the partition once data_until is older than the table's retention. For a daily or weekly
-- partition it is range_end; for the partitions holding rows from before the conversion, the
-- conversion's time.
create table storage_partitions (
    name        text primary key,
    parent      text        not null references storage_partitioned_tables (parent),
    range_start timestamptz,
    range_end   timestamptz,
    data_until  timestamptz not null
);
create index storage_partitions_parent_idx on storage_partitions (parent, data_until);

-- The smallest UUIDv7 of an instant: its Unix milliseconds in the first 48 bits, every other bit 0.
-- A UUIDv7 made at or after p_at (any version and variant bits) compares at or above it.
create function storage_uuid7_floor(p_at timestamptz) returns uuid
    language sql immutable strict parallel safe
    return (lpad(to_hex(floor(extract(epoch from p_at) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid;

-- The start of the period (UTC day, or ISO week from Monday 00:00 UTC) p_at falls in.
create function storage_period_start(p_period text, p_at timestamptz) returns timestamptz
    language sql immutable strict parallel safe
    return date_trunc(p_period, p_at at time zone 'UTC') at time zone 'UTC';

-- A partition bound for an instant, as SQL text: the instant itself, or its UUIDv7 floor.
create function storage_bound(p_kind text, p_at timestamptz) returns text
    language sql immutable parallel safe
    return case when p_at is null then null
                when p_kind = 'uuid7' then quote_literal(storage_uuid7_floor(p_at)::text) || '::uuid'
                else quote_literal(to_char(p_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00') || '::timestamptz' end;

-- Creates the partition of p_parent for the period that holds p_at, unless it exists or another
-- partition (one from before the conversion) covers that time. Rows that were routed to the default
-- partition for want of this one (a clock ahead, a notification scheduled far ahead) move into it
-- first, so the attach never fails on them. The partition is made as a table of its own and then
-- attached: ATTACH takes a SHARE UPDATE EXCLUSIVE lock on the parent, so reads and writes of the
-- other partitions go on (CREATE TABLE … PARTITION OF would take an ACCESS EXCLUSIVE one). The
-- attach scans the default partition, which stays empty or nearly so. True when it created one.
create function storage_create_partition(p_parent text, p_at timestamptz) returns boolean
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
    v_end := v_start + case t.period when 'day' then interval '1 day' else interval '7 days' end;
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

-- The partitions of every partitioned table from the period of p_from to that of p_to: what the
-- maintenance task keeps ahead of time. The number created.
create function storage_create_partitions(p_from timestamptz, p_to timestamptz) returns integer
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
            v_at := v_at + case t.period when 'day' then interval '1 day' else interval '7 days' end;
        end loop;
    end loop;
    return v_count;
end
$$;

-- Drops one partition: detach (a short ACCESS EXCLUSIVE lock on the parent; the caller sets a
-- lock_timeout and tries again later rather than queue behind a long transaction) and drop, which
-- unlinks its files: nothing is deleted row by row and nothing is left for VACUUM.
create function storage_drop_partition(p_name text) returns void
language plpgsql as $$
declare
    v_parent text;
begin
    select parent into strict v_parent from storage_partitions where name = p_name;
    execute format('alter table %I detach partition %I', v_parent, p_name);
    execute format('drop table %I', p_name);
    delete from storage_partitions where name = p_name;
end
$$;

-- Converts a table in place into one range-partitioned on p_key: a new partitioned table of the same
-- columns, defaults and check constraints gets the rows; then the old table is dropped and the new
-- one takes its name, primary key (p_primary_key, which must include the key), indexes, foreign keys,
-- triggers and the views over it. Indexes, triggers and views are read from the catalog, not listed here, so
-- whatever earlier migrations put on the table (statement-level triggers with transition tables
-- included: PostgreSQL fires them on a partitioned table's parent) is carried over as it was.
-- Triggers are recreated after the rows are copied, so the copy fires none of them (the daily
-- outcome counts are not counted again). The caller registers the table first; p_first_partitions
-- (SQL run after the partitioned table and its default partition exist, before the copy) creates the
-- partitions the existing rows go to.
create function storage_convert(p_table text, p_primary_key text, p_first_partitions text) returns void
language plpgsql as $$
declare
    v_old      text := p_table || '_unpartitioned';
    t          storage_partitioned_tables;
    v_indexes  text[];
    v_triggers text[];
    v_foreign_keys text[];
    v_views    record;
    v_view_defs text[] := '{}';
    v_view_names text[] := '{}';
    v_seq      record;
    v_seqs     text[] := '{}';
    v_def      text;
begin
    select * into strict t from storage_partitioned_tables where parent = p_table;
    select coalesce(array_agg(pg_get_indexdef(i.indexrelid) order by i.indexrelid), '{}') into v_indexes
    from pg_index i where i.indrelid = p_table::regclass and not i.indisprimary;
    select coalesce(array_agg(pg_get_triggerdef(g.oid) order by g.oid), '{}') into v_triggers
    from pg_trigger g where g.tgrelid = p_table::regclass and not g.tgisinternal;
    select coalesce(array_agg(format('alter table %I add constraint %I %s', p_table, c.conname, pg_get_constraintdef(c.oid))
                              order by c.oid), '{}') into v_foreign_keys
    from pg_constraint c where c.conrelid = p_table::regclass and c.contype = 'f';

    -- views over the table, and views over those, deepest last
    for v_views in
        with recursive deps (view_oid, depth) as (
            select distinct r.ev_class, 1
            from pg_depend d join pg_rewrite r on r.oid = d.objid
            where d.classid = 'pg_rewrite'::regclass and d.refobjid = p_table::regclass and r.ev_class <> p_table::regclass
            union
            select distinct r.ev_class, deps.depth + 1
            from deps join pg_depend d on d.refobjid = deps.view_oid
                 join pg_rewrite r on r.oid = d.objid
            where d.classid = 'pg_rewrite'::regclass and r.ev_class <> deps.view_oid
        )
        select view_oid::regclass::text as name, pg_get_viewdef(view_oid) as def, max(depth) as depth
        from deps group by view_oid order by max(depth)
    loop
        v_view_names := v_view_names || v_views.name;
        v_view_defs := v_view_defs || format('create view %s as %s', v_views.name, v_views.def);
    end loop;
    for i in reverse coalesce(array_length(v_view_names, 1), 0) .. 1 loop
        execute 'drop view ' || v_view_names[i];
    end loop;

    -- sequences owned by the table's columns (bigserial) would be dropped with it
    for v_seq in
        select s.oid::regclass::text as seq, a.attname
        from pg_depend d join pg_class s on s.oid = d.objid and s.relkind = 'S'
             join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
        where d.refobjid = p_table::regclass and d.deptype = 'a'
    loop
        execute format('alter sequence %s owned by none', v_seq.seq);
        v_seqs := v_seqs || format('alter sequence %s owned by %I.%I', v_seq.seq, p_table, v_seq.attname);
    end loop;

    execute format('alter table %I rename to %I', p_table, v_old);
    execute format('create table %I (like %I including defaults including constraints including storage) partition by range (%I)',
                   p_table, v_old, t.key_column);
    execute format('create table %I partition of %I default', p_table || '_default', p_table);
    execute p_first_partitions;
    execute format('insert into %I select * from %I', p_table, v_old);
    execute format('drop table %I', v_old);
    execute format('alter table %I add constraint %I primary key (%s)', p_table, p_table || '_pkey', p_primary_key);
    foreach v_def in array v_indexes loop
        execute v_def;
    end loop;
    foreach v_def in array v_foreign_keys loop
        execute v_def;
    end loop;
    foreach v_def in array v_triggers loop
        execute v_def;
    end loop;
    foreach v_def in array v_view_defs loop
        execute v_def;
    end loop;
    foreach v_def in array v_seqs loop
        execute v_def;
    end loop;
    execute format('analyze %I', p_table);
end
$$;

-- Unfinished notifications by their audience time: retention drops a day of recipients only when no
-- notification of that day or before is still without its summary (the counts that outlive the rows).
create index notifications_without_summary_idx on notifications (audience_at) where summary is null;

-- notification_recipients: by notification id, in daily ranges. Notification ids are UUIDv7 from now
-- on, made from the notification's audience time (its creation, or its scheduled time), so every
-- statement that names a notification (claims, recording by (notification_id, device_id), reads,
-- counts) reaches exactly one partition without a new column or a change to any query, and the
-- primary key (notification_id, device_id) already holds the key. Ids made before this migration are
-- random (UUIDv4): those rows go to two partitions of their own below and above the UUIDv7 times of
-- the next ten years, dropped whole once retention has passed since this migration; the few whose
-- random id falls inside those ten years land in the day partitions (or the default one until their
-- day's partition is created), and leave with them.
insert into storage_partitioned_tables (parent, key_column, key_kind, period)
values ('notification_recipients', 'notification_id', 'uuid7', 'day');

select storage_convert('notification_recipients', 'notification_id, device_id', $convert$
    do $first$
    declare
        v_today timestamptz := storage_period_start('day', now());
        v_until timestamptz := greatest(now(), (select max(audience_at) from notifications));
    begin
        create table notification_recipients_legacy (like notification_recipients including defaults including constraints including storage);
        execute format('alter table notification_recipients attach partition notification_recipients_legacy for values from (minvalue) to (%s)',
                       storage_bound('uuid7', v_today));
        create table notification_recipients_legacy_high (like notification_recipients including defaults including constraints including storage);
        execute format('alter table notification_recipients attach partition notification_recipients_legacy_high for values from (%s) to (maxvalue)',
                       storage_bound('uuid7', v_today + interval '3653 days'));
        insert into storage_partitions (name, parent, range_start, range_end, data_until) values
            ('notification_recipients_legacy', 'notification_recipients', null, v_today, v_until),
            ('notification_recipients_legacy_high', 'notification_recipients', v_today + interval '3653 days', null, v_until);
        perform storage_create_partition('notification_recipients', v_today + make_interval(days => d))
        from generate_series(0, 7) as d;
    end
    $first$
$convert$);
