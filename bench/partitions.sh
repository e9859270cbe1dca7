#!/usr/bin/env bash
# Storage of the time-partitioned tables (docs/storage.md): bytes per recipient row and per event row,
# and how long retention takes to drop a day's partition of 1,000,000 recipient rows.
#
#   bench/partitions.sh [ROWS]     (default 1000000)
#
# Runs psql against the database the usual libpq variables name (PGHOST, PGPORT, PGUSER, PGDATABASE),
# which must hold the service's schema (a database the service has migrated). It works in a day and a
# week of the year 2035, far from any real partition, under an app of its own, and leaves nothing
# behind but that app's rows in apps, organisations and delivery_daily_counts.
set -euo pipefail
ROWS="${1:-1000000}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
psql -X -v ON_ERROR_STOP=1 -q -v rows="$ROWS" <<'SQL'
\pset footer off
select version();
insert into organisations (id, name) values ('00000000-0000-4000-8000-0000000b3c01', 'bench partitions') on conflict do nothing;
insert into apps (id, org_id, name) values ('00000000-0000-4000-8000-0000000b3c02', '00000000-0000-4000-8000-0000000b3c01', 'bench partitions')
on conflict do nothing;
select storage_create_partition('notification_recipients', '2035-01-10 00:00+00') as recipients_partition,
       storage_create_partition('events', '2035-01-10 00:00+00') as events_partition;
\timing on
-- recipients as a finished send leaves them: 100 notifications of the day, accepted with a provider id
insert into notification_recipients (notification_id, device_id, app_id, platform, user_id, external_user_id, status,
                                     attempts, next_attempt_at, provider_message_id, updated_at, due_at, expires_at)
select (lpad(to_hex(floor(extract(epoch from timestamptz '2035-01-10 08:00+00') * 1000)::bigint + g % 100), 12, '0')
        || '7000' || '8' || substr(md5((g % 100)::text), 1, 15))::uuid,
       gen_random_uuid(), '00000000-0000-4000-8000-0000000b3c02', 'ios', gen_random_uuid(), 'user-' || g, 'accepted', 1,
       timestamptz '2035-01-10 08:00+00', 'projects/bench/messages/0:' || (1700000000000000 + g)::text,
       timestamptz '2035-01-10 08:00:05+00', timestamptz '2035-01-10 08:00+00', timestamptz '2035-02-07 08:00+00'
from generate_series(1, :rows) g;
-- engagement events: an open or a click of a notification, with the device, its user and no metadata
insert into events (id, app_id, event_type, device_id, user_id, notification_id, occurred_at, received_at)
select gen_random_uuid(), '00000000-0000-4000-8000-0000000b3c02', case when g % 5 = 0 then 'clicked' else 'opened' end,
       gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
       timestamptz '2035-01-10 08:00+00' + g * interval '1 ms', timestamptz '2035-01-10 08:00+00' + g * interval '1 ms'
from generate_series(1, :rows) g;
\timing off
checkpoint;
vacuum analyze notification_recipients_p20350110, events_p20350108;
select 'notification_recipients' as table, count(*) as row_count,
       pg_size_pretty(pg_total_relation_size('notification_recipients_p20350110')) as total,
       round(pg_total_relation_size('notification_recipients_p20350110')::numeric / count(*), 1) as bytes_per_row,
       round(pg_relation_size('notification_recipients_p20350110')::numeric / count(*), 1) as heap_bytes_per_row
from notification_recipients_p20350110
union all
select 'events', count(*), pg_size_pretty(pg_total_relation_size('events_p20350108')),
       round(pg_total_relation_size('events_p20350108')::numeric / count(*), 1),
       round(pg_relation_size('events_p20350108')::numeric / count(*), 1)
from events_p20350108;
\timing on
-- what retention does with a day of recipients and a week of events
select storage_drop_partition('notification_recipients_p20350110');
select storage_drop_partition('events_p20350108');
\timing off
SQL
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
