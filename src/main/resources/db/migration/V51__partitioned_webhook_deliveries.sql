-- Bounded storage, continued (see V49 and docs/storage.md): webhook deliveries (each with its attempt
-- figures) become range-partitioned by id, in weekly ranges. Weekly, not daily as recipients: the
-- claim reads every partition's pending deliveries of the webhooks it serves (it names no delivery
-- yet), so fewer partitions mean a cheaper claim, and webhook volume is far below recipient volume.
--
-- A delivery's id (the webhook-id header) is now a UUIDv7: for a relayed fact, made from the fact's
-- time with the other bits a hash of (webhook, fact), so relaying a fact twice to a webhook makes the
-- same id and the primary key refuses the second (the guard the unique (webhook_id,
-- lifecycle_event_id) was, which a partitioned table cannot keep without the key); for a test or a
-- direct delivery, from the time it was queued with random bits. Every statement that names a
-- delivery (locking the claimed ones, recording attempts) reaches one partition; finding due
-- deliveries and the lists by webhook read each partition's (webhook_id, …) indexes. Rows from before this migration (random ids) go to
-- partitions of their own as in V49, dropped whole once retention has passed since this migration.

-- A UUIDv7 of p_at whose 74 other bits are random, or, with p_seed, taken from its MD5 (the same seed
-- and millisecond give the same id).
create function storage_uuid7(p_at timestamptz, p_seed text) returns uuid
    language sql volatile parallel safe
    return (select (substr(f, 1, 12) || '7' || substr(h, 1, 3) || to_hex(8 | (('x' || substr(h, 4, 1))::bit(4)::int & 3))
                    || substr(h, 5, 15))::uuid
            from (select storage_uuid7_floor(p_at)::text as u,
                         md5(coalesce(p_seed, gen_random_uuid()::text)) as h) s,
                 lateral (select replace(s.u, '-', '') as f) x);

alter table webhook_deliveries drop constraint webhook_deliveries_webhook_id_lifecycle_event_id_key;

insert into storage_partitioned_tables (parent, key_column, key_kind, period)
values ('webhook_deliveries', 'id', 'uuid7', 'week');

select storage_convert('webhook_deliveries', 'id', $convert$
    do $first$
    declare
        v_today timestamptz := storage_period_start('week', now());
    begin
        create table webhook_deliveries_legacy (like webhook_deliveries including defaults including constraints including storage);
        execute format('alter table webhook_deliveries attach partition webhook_deliveries_legacy for values from (minvalue) to (%s)',
                       storage_bound('uuid7', v_today));
        create table webhook_deliveries_legacy_high (like webhook_deliveries including defaults including constraints including storage);
        execute format('alter table webhook_deliveries attach partition webhook_deliveries_legacy_high for values from (%s) to (maxvalue)',
                       storage_bound('uuid7', v_today + interval '3653 days'));
        insert into storage_partitions (name, parent, range_start, range_end, data_until) values
            ('webhook_deliveries_legacy', 'webhook_deliveries', null, v_today, now()),
            ('webhook_deliveries_legacy_high', 'webhook_deliveries', v_today + interval '3653 days', null, now());
        perform storage_create_partition('webhook_deliveries', v_today + make_interval(days => 7 * w))
        from generate_series(0, 1) as w;
    end
    $first$
$convert$);
