#!/usr/bin/env bash
# Registration benchmark: the service on its embedded PostgreSQL, wrk at concurrency 64 posting
# /v1/devices/register with 50% fresh and 50% repeated tokens. Prints requests/s, p50/p99, and the
# CPU each registration cost the service, its PostgreSQL and wrk (from /proc).
# BENCH_PGSS=1 preloads pg_stat_statements (tracking nested statements too: functions, triggers; one
# restart before the run) and prints, per registration, the statements PostgreSQL ran over the whole
# run (warm-up included, background work of the service included) and the busiest of them.
# Usage: [WARMUP=30] [PUSH_DB_POOL_SIZE=n] [BENCH_PGSS=1] bench/registration.sh [seconds=30] [repeat-percent=50]
source "$(dirname "$0")/lib.sh"
DURATION=${1:-30}
WARMUP=${WARMUP:-30}
REPEAT=${2:-50}
PORT=${PORT:-18090}
DATA=$(mktemp -d /tmp/push-bench-reg.XXXXXX)
trap 'stop_service; rm -rf "$DATA"' EXIT

need_wrk
build_jar
SERVICE_ENV=(PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000
  ${PUSH_DB_POOL_SIZE:+PUSH_DB_POOL_SIZE=$PUSH_DB_POOL_SIZE})
start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
KEY=$(bootstrap_key "$DATA" public)
if [ -n "${BENCH_PGSS:-}" ]; then
  PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
  $PG -c "alter system set shared_preload_libraries = 'pg_stat_statements'" \
      -c "alter system set pg_stat_statements.track = 'all'" >/dev/null
  stop_service
  pgpid=$(postmaster_pid "$DATA"); [ -n "$pgpid" ] && kill -INT "$pgpid" 2>/dev/null || true
  for _ in $(seq 1 60); do [ -z "$pgpid" ] || ! kill -0 "$pgpid" 2>/dev/null && break; sleep 0.5; done
  start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
  PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
  $PG -c "create extension if not exists pg_stat_statements" -c "select pg_stat_statements_reset()" >/dev/null
fi

echo "repeated tokens: ${REPEAT}%"
PUSH_KEY=$KEY REPEAT_PERCENT=$REPEAT wrk_measured "$DATA" "$PORT" "$ROOT/bench/registration.lua" requests/s registration

if [ -n "${BENCH_PGSS:-}" ]; then
  $PG -At -F ' ' -c "with r as (select sum(calls) as n from pg_stat_statements where query like 'select * from register_device(%')
      select 'statements per registration (warm-up and background work included):', round(sum(calls) / (select n from r), 2),
             'over', (select n from r), 'registrations' from pg_stat_statements"
  echo "busiest statements: calls per registration, mean ms, total ms, statement"
  $PG -At -F ' | ' -c "with r as (select sum(calls) as n from pg_stat_statements where query like 'select * from register_device(%')
      select round(calls / (select n from r), 3), round(mean_exec_time::numeric, 3), round(total_exec_time::numeric),
             left(regexp_replace(query, '\s+', ' ', 'g'), 120) from pg_stat_statements
      order by total_exec_time desc limit 15" | sed 's/^/  /'
fi
