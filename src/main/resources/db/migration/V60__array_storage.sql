-- How PostgreSQL stores and analyzes the arrays of handovers and recorded batches (issue 29, CPU per recipient).
--
-- 1. Statistics. ANALYZE computes element statistics for every array column: for a day's partition of
--    batches it detoasts and hashes up to 30,000 rows x ~200 ids, and autovacuum analyzes these tables
--    again and again while a large send writes them (the handovers churn: inserted and deleted by the
--    hundred per second). Measured here on 1,500 batches of 200: 555 ms per ANALYZE, 0.6 ms with the arrays'
--    statistics off. No query filters on these arrays by selectivity (the device lookup finds its batch through
--    the GIN index, which a default estimate picks as well), so their statistics target is 0.
--
-- 2. Compression.
-- A handover (up to 250 recipients) and a batch of accepted outcomes (about 200) are rows of a few KB:
-- PostgreSQL first tries to compress their largest values (pglz, the default), then moves them out of
-- line. Device and user ids are uuids (random, or time-ordered with random low bytes): pglz never saves
-- anything on them and spent about 5% of PostgreSQL's CPU in a bulk send (perf, bench/README.md, 2026-12-07),
-- the batches' provider message ids most of it. Measured here on 500 rows of 200 ids: 161 ms with pglz,
-- 80 with lz4 on the message ids and no compression of the uuid arrays, same size on disk.
--
-- - uuid arrays: EXTERNAL (out of line when large, never compressed);
-- - provider message ids: lz4 where the server has it (it gives up fast on APNs' random ids and still
--   compresses FCM's "projects/<project>/messages/…" names), pglz otherwise;
-- - platforms, external user ids and render values keep the default: they repeat and compress.
--
-- Only values written from now on are affected; partitions created later take the parent's settings
-- (storage_create_partition below now copies the compression and the statistics targets too).
alter table notification_handovers
    alter column device_ids set storage external,
    alter column user_ids set storage external,
    alter column device_ids set statistics 0,
    alter column user_ids set statistics 0,
    alter column platforms set statistics 0,
    alter column external_user_ids set statistics 0,
    alter column render_values set statistics 0;

alter table notification_recipient_batches
    alter column device_ids set storage external,
    alter column user_ids set storage external,
    alter column device_ids set statistics 0,
    alter column user_ids set statistics 0,
    alter column external_user_ids set statistics 0,
    alter column provider_message_ids set statistics 0;

do $$
declare
    part regclass;
begin
    -- a server built without lz4 refuses the setting; it keeps pglz then
    perform set_config('default_toast_compression', 'lz4', true);
    -- the parent's setting is what partitions created later take; existing ones (PostgreSQL 15 does not
    -- pass it down) are set one by one
    alter table notification_recipient_batches alter column provider_message_ids set compression lz4;
    for part in select inhrelid::regclass from pg_inherits where inhparent = 'notification_recipient_batches'::regclass loop
        execute format('alter table %s alter column provider_message_ids set compression lz4', part);
    end loop;
exception when invalid_parameter_value or feature_not_supported then
    raise notice 'lz4 is not available: provider message ids stay with pglz';
end
$$;

-- Partitions made from now on copy the columns' compression (V54's function, with "including compression") and
-- their statistics targets (LIKE does not copy those).
create or replace function storage_create_partition(p_parent text, p_at timestamptz) returns boolean
language plpgsql as $$
declare
    t       storage_partitioned_tables;
    v_start timestamptz;
    v_end   timestamptz;
    v_name  text;
    v_lo    text;
    v_hi    text;
    a       record;
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
    execute format('create table %I (like %I including defaults including constraints including storage including compression)', v_name, p_parent);
    execute format('with moved as (delete from %I where %I >= %s and %I < %s returning *) insert into %I select * from moved',
                   p_parent || '_default', t.key_column, v_lo, t.key_column, v_hi, v_name);
    for a in select attname, attstattarget from pg_attribute
             where attrelid = p_parent::regclass and attnum > 0 and not attisdropped and attstattarget >= 0 loop
        execute format('alter table %I alter column %I set statistics %s', v_name, a.attname, a.attstattarget);
    end loop;
    execute format('alter table %I attach partition %I for values from (%s) to (%s)', p_parent, v_name, v_lo, v_hi);
    insert into storage_partitions (name, parent, range_start, range_end, data_until)
    values (v_name, p_parent, v_start, v_end, v_end);
    return true;
end
$$;

-- Whether any handover of a platform waits for a lease: what every claimer asks at each poll before it runs
-- the lease statement (DeliveryRecipientRepository.leaseHandovers). Without it that look would walk the
-- other platforms' unleased handovers in notification_handovers_unleased_idx.
create index notification_handovers_unleased_platform_idx on notification_handovers (platform) where lease_until is null;
