#!/usr/bin/env bash
# What an idle instance costs: the service (jar, embedded PostgreSQL) with one app and nothing to do, its
# background loops polling (delivery claimers and leases, webhook relay and dispatcher, journeys, jobs).
# Waits BENCH_SETTLE seconds (default 30) after start-up, then prints the CPU of the service and of its
# PostgreSQL over SECONDS as a share of one core, the service's by thread group, and the statements
# PostgreSQL ran most (pg_stat_statements: calls per second, execution and planning ms per second).
# Asserts nothing.
#   bench/idle.sh [seconds=60]
source "$(dirname "$0")/lib.sh"
SECONDS_MEASURED=${1:-60}
PORT=${PORT:-18297}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
DATA=$(mktemp -d /tmp/push-bench-idle.XXXXXX)
cleanup() {
  stop_service
  stop_postgres "$DATA"
  rm -rf "$DATA"
}
trap cleanup EXIT

build_jar
start_service "$PORT" "$DATA"
KEY=$(bootstrap_key "$DATA" server)
[ -n "$KEY" ] || { echo "no bootstrap key; see $DATA/service.log" >&2; exit 1; }
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
# pg_stat_statements needs a preloaded library: set it, restart the service and its PostgreSQL
$PG -c "alter system set shared_preload_libraries = 'pg_stat_statements'" \
    -c "alter system set pg_stat_statements.track_planning = on" >/dev/null
stop_service
stop_postgres "$DATA"
start_service "$PORT" "$DATA"
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres" # its port may change
$PG -c "create extension if not exists pg_stat_statements" >/dev/null
echo "settling ${BENCH_SETTLE:-30} s after start-up ..."
sleep "${BENCH_SETTLE:-30}"
PGPID=$(postmaster_pid "$DATA")
$PG -c "select pg_stat_statements_reset()" >/dev/null
thread_ticks "$SERVICE_PID" >"$DATA/threads.0"
s0=$(cpu_ticks "$SERVICE_PID"); p0=$(cpu_ticks "$PGPID")
sleep "$SECONDS_MEASURED"
s1=$(cpu_ticks "$SERVICE_PID"); p1=$(cpu_ticks "$PGPID")
thread_ticks "$SERVICE_PID" >"$DATA/threads.1"
hz=$(getconf CLK_TCK)
awk -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v hz="$hz" -v t="$SECONDS_MEASURED" 'BEGIN {
  printf "idle for %d s: service %.2f%% of a core, PostgreSQL %.2f%% (every process of the cluster)\n", t, 100 * s / hz / t, 100 * p / hz / t }'
echo "service CPU by thread group, ms per second:"
awk -v hz="$hz" -v t="$SECONDS_MEASURED" 'FNR == NR { a[$1] += $2; next } { b[$1] += $2 }
  END { for (k in b) { d = b[k] - a[k]; if (d > 0) printf "  %7.2f  %s\n", d / hz * 1000 / t, k } }' \
  "$DATA/threads.0" "$DATA/threads.1" | sort -rn | head -15
echo "statements (top 12 by execution + planning time): calls/s, exec ms/s, plan ms/s, statement"
$PG -At -F ' | ' -c "select round(calls / $SECONDS_MEASURED.0, 1), round((total_exec_time / $SECONDS_MEASURED)::numeric, 2),
    round((total_plan_time / $SECONDS_MEASURED)::numeric, 2), left(regexp_replace(query, '\s+', ' ', 'g'), 100)
    from pg_stat_statements where query not like '%pg_stat_statements%'
    order by total_exec_time + total_plan_time desc limit 12" | sed 's/^/  /'
