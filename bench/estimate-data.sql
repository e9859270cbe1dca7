-- Data for bench/estimate.sh, loaded set-based into one app (psql variable :app):
-- 200,000 users with tags, 1,000,000 devices (5 per user), ~2.1 million device_event_last rows.
-- Triggers are off for the load (session_replication_role = replica): the per-row active-device
-- counter would otherwise update one row a million times; the count is set once at the end.
\set ON_ERROR_STOP on
set session_replication_role = replica;
set synchronous_commit = off;

insert into users (id, app_id, external_user_id, locale, timezone, tags, created_at, updated_at)
select gen_random_uuid(), :'app', 'user-' || i,
       (array['en', 'de', 'fr', 'es', 'pt-BR'])[1 + i % 5],
       (array['Europe/Berlin', 'America/New_York', 'UTC', 'Asia/Tokyo'])[1 + i % 4],
       jsonb_build_object('plan', (array['free', 'gold', 'silver', 'platinum', 'free', 'free', 'free', 'free'])[1 + i % 8],
                          'level', (i % 50)::text,
                          'country', (array['DE', 'US', 'FR', 'JP', 'BR', 'GB', 'IN', 'ES', 'IT', 'NL'])[1 + i % 10],
                          'cohort', 'c' || (i % 100)),
       now(), now()
from generate_series(1, 200000) i;

insert into devices (id, app_id, platform, token, token_hash, user_id, app_version, locale, timezone,
                     enabled, invalidated_at, last_seen_at, created_at, updated_at)
select gen_random_uuid(), :'app', (array['ios', 'android', 'android', 'web'])[1 + (x.n * 7) % 4],
       'bench-token-' || x.n, sha256(('bench-token-' || x.n)::bytea), u.id,
       (array['3.1.0', '3.2.0', '3.2.1', '3.10.0', '2.9.4'])[1 + x.n % 5],
       -- half the devices report no locale, two thirds no time zone: the user's applies
       case when x.n % 2 = 0 then (array['en-US', 'de', 'fr', 'es', 'ja'])[1 + x.n % 5] end,
       case when x.n % 3 = 0 then 'Europe/Paris' end,
       -- 3% disabled, 2% invalidated: not in any audience
       x.n % 33 <> 0, case when x.n % 50 = 0 then now() end,
       now() - make_interval(days => (x.n % 90)::int), now() - make_interval(days => (x.n % 730)::int), now()
from (select id, row_number() over (order by id) as rn from users where app_id = :'app') u
     cross join generate_series(0, 4) j
     cross join lateral (select (u.rn - 1) * 5 + j as n) x;

-- latest event per device and kind: received 90%, opened 60% (over 60 days), clicked 30%,
-- custom purchase 10%, custom x 20%
insert into device_event_last (app_id, device_id, event_key, last_at)
select d.app_id, d.id, k.key, now() - make_interval(hours => (hashtext(d.id::text || k.key) & 2147483647) % (k.days * 24))
from devices d
     cross join (values ('received', 90, 30), ('opened', 60, 60), ('clicked', 30, 60),
                        ('custom:purchase', 10, 365), ('custom:x', 20, 30)) k(key, pct, days)
where d.app_id = :'app' and (hashtext(d.id::text || k.key) & 2147483647) % 100 < k.pct;

insert into org_device_usage (org_id, active)
select a.org_id, (select count(*) from devices where app_id = :'app' and enabled and invalidated_at is null)
from apps a where a.id = :'app'
on conflict (org_id) do update set active = excluded.active;

reset session_replication_role;
vacuum analyze users;
vacuum analyze devices;
vacuum analyze device_event_last;
