-- Loads iOS devices lo..hi of one app, and their users (device n belongs to user (n-1)/5+1), set-based,
-- for the benchmarks that need a large devices table (bench/scale.sh, bench/registration-beside.sh).
-- With triggers off: the per-row active-device counter and lifecycle fact would cost a row update and an
-- insert per device (bench/estimate-data.sql). With final=true, afterwards: the organisation's active
-- count set once from the table, users and devices vacuumed and analyzed.
--   psql -v app=UUID -v lo=N -v hi=M -v device_id=EXPR [-v final=true] -f bench/load-devices.sql
-- device_id: the SQL that makes device n's id from `created` (its created_at), as the service under test
-- makes ids: `storage_uuid7(created)` (V56 and later), `gen_random_uuid()` (before).
-- Every 5th device has a locale of its own, every 3rd a time zone; 3% are disabled, 2% invalidated;
-- last seen within 90 days; created 100 µs apart, from 30 days ago. Users: five locales, four zones,
-- tags plan (half free), level and cohort.
\set ON_ERROR_STOP on
set session_replication_role = replica;
set synchronous_commit = off;
insert into users (id, app_id, external_user_id, locale, timezone, tags, created_at, updated_at)
select md5('scale-user-' || i)::uuid, :'app', 'user-' || i,
       (array['en', 'de', 'fr', 'es', 'pt-BR'])[1 + i % 5],
       (array['Europe/Berlin', 'America/New_York', 'UTC', 'Asia/Tokyo'])[1 + i % 4],
       jsonb_build_object('plan', (array['free', 'gold', 'silver', 'platinum', 'free', 'free', 'free', 'free'])[1 + i % 8],
                          'level', (i % 50)::text, 'cohort', 'c' || (i % 100)),
       now(), now()
from generate_series((:lo - 1) / 5 + 1, (:hi - 1) / 5 + 1) i
on conflict do nothing;
insert into devices (id, app_id, platform, token, token_hash, user_id, app_version, locale, timezone,
                     enabled, invalidated_at, last_seen_at, created_at, updated_at)
select :device_id, :'app', 'ios', encode(sha256(('ios-' || n)::bytea), 'hex'), sha256(('ios-' || n)::bytea),
       md5('scale-user-' || ((n - 1) / 5 + 1))::uuid,
       (array['3.1.0', '3.2.0', '3.2.1', '3.10.0', '2.9.4'])[1 + n % 5],
       case when n % 2 = 0 then (array['en-US', 'de', 'fr', 'es', 'ja'])[1 + n % 5] end,
       case when n % 3 = 0 then 'Europe/Paris' end,
       n % 33 <> 0, case when n % 50 = 0 then now() end,
       now() - make_interval(days => (n % 90)::int), created, now()
from (select n, now() - interval '30 days' + n * interval '100 microseconds' as created
      from generate_series(:lo, :hi) n) s;
reset session_replication_role;
\if :{?final}
\if :final
insert into org_device_usage (org_id, active)
select a.org_id, (select count(*) from devices where app_id = :'app' and enabled and invalidated_at is null)
from apps a where a.id = :'app'
on conflict (org_id) do update set active = excluded.active;
vacuum analyze users;
vacuum analyze devices;
\endif
\endif
