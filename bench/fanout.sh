#!/usr/bin/env bash
# Fan-out benchmark: the service (jar) on its embedded PostgreSQL and the three local peers in their
# own JVM (bench/FanoutPeers), on this machine. One notification to `all` over DEVICES devices; prints
# recipients/s from the 202 to the last terminal recipient, the time to the first accepted push, CPU
# per recipient (service, PostgreSQL, peers), and the latency of single-device transactional
# notifications sent once a second during the fan-out (p50, p99). Asserts nothing.
#   bench/fanout.sh [devices=100000] [mix=ios|thirds] [crash]
# mix=thirds: a third of the devices per platform. crash: kill -9 the service mid-fan-out, start it
# again and count what every recipient ended as, and how many devices got the push twice (only those
# in flight at the kill may). Two measures of the transactional sends: "202 -> accepted by the APNs
# peer", from the client's receipt of the 202 to the peer accepting the push (the peer logs each probe
# with its own clock: same machine, same wall clock), with "POST -> 202" beside it; and, as before,
# "created -> recorded", from the notification's created_at (taken inside the creation transaction,
# before the 202) to the recipient's recorded updated_at (a few ms after the provider's answer), which
# adds the creation transaction and the recording queue to the first. BENCH_KEEP=1 keeps the data
# directory. BENCH_JFR=/path/x.jfr records the service with Java Flight Recorder (profile settings) into that file; read it with
# `jfr print --events jdk.ExecutionSample` or `jfr summary`. BENCH_JAVA_OPTS adds JVM options to the service
# (e.g. an async-profiler agent). BENCH_ASPROF=/path/libasyncProfiler.so attaches async-profiler (from Maven Central's
# tools.profiler:async-profiler jar) for the measured send only and writes collapsed stacks per thread to
# BENCH_ASPROF_OUT (default /tmp/fanout-profile.txt).
# BENCH_THREADS=1 prints the service's CPU per recipient of the measured send by thread group, read from /proc
# (no agent attached, so nothing is deoptimized: the JIT compilers' share as it is unprofiled).
# BENCH_PERF=/path/perf.data records every process with `perf record -a` for the measured send only; read
# PostgreSQL's share with `perf report -i /path/perf.data --comm postgres --sort symbol`.
# BENCH_PGSS=1 preloads pg_stat_statements (one restart before the run) and prints the statements that
# took the most PostgreSQL time from the 202 to the end (BENCH_PGSS_TOP, 12): calls, rows, mean and total ms. BENCH_PGSS=all
# also lists the statements that functions and triggers run (each is counted in its caller's row too). With it,
# BENCH_EXPLAIN=MS also logs the plans (rows and buffers) of statements slower than MS ms into service.log.
# Delivery controls (issue 11), to compare with the plain run: BENCH_CAP=1 sets a frequency cap
# (100 per user per day: every recipient is checked and counted, none is capped); BENCH_LOCAL_TIME=1
# gives every device one of six zones (all UTC+1 in winter) and sends with `local_delivery_time`
# two minutes ahead, so each recipient's send time is computed in its own zone and all come due
# together; rates are then counted from that due time instead of the 202.
# BENCH_WARMUP=N first sends N unmeasured bulk notifications to every device (JIT and caches warm, as
# in a service that has been running), then measures the next.
# Devices get ids as the checkout makes them (time-ordered from V56 on, random before);
# BENCH_DEVICE_IDS=random loads random ids on any checkout.
source "$(dirname "$0")/lib.sh"
DEVICES=${1:-100000}
MIX=${2:-ios}
CRASH=${3:-}
PORT=${PORT:-18293}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
DATA=$(mktemp -d /tmp/push-bench-fanout.XXXXXX)
PEERS=$DATA/peers
cleanup() {
  stop_service
  [ -n "${PROBES_PID:-}" ] && kill "$PROBES_PID" 2>/dev/null || true
  [ -n "${PEERS_PID:-}" ] && kill "$PEERS_PID" 2>/dev/null && wait "$PEERS_PID" 2>/dev/null || true
  stop_postgres "$DATA"
  [ -n "${BENCH_KEEP:-}" ] && echo "data kept in $DATA" || rm -rf "$DATA"
}
trap cleanup EXIT

build_jar
(cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
  && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
JAVA=$(find_java)
WEB=0; [ "$MIX" = thirds ] && WEB=$((DEVICES / 3))
"$JAVA" --enable-native-access=ALL-UNNAMED -Xms256m -Xmx1g \
  -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
  dev.pushservice.bench.FanoutPeers "$PEERS" "$WEB" >"$DATA/peers.log" 2>&1 &
PEERS_PID=$!
for _ in $(seq 1 120); do [ -s "$PEERS/peers.env" ] && [ -s "$PEERS/counts.txt" ] && break; sleep 1; done
[ -s "$PEERS/peers.env" ] || { echo "peers did not start; see $DATA/peers.log" >&2; cat "$DATA/peers.log" >&2; exit 1; }

# shellcheck disable=SC2046
SERVICE_ENV=(PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000 PUSH_DELIVERY_LEASE=20s
  $(cat "$PEERS/peers.env"))
[ -n "${BENCH_EXPLAIN:-}" ] && SERVICE_ENV+=(LOGGING_LEVEL_IO_ZONKY_TEST_DB_POSTGRES=info) # PostgreSQL's log, with the plans
JAVA_OPTS_BENCH=${BENCH_JAVA_OPTS:-}
[ -n "${BENCH_JFR:-}" ] && JAVA_OPTS_BENCH+=" -XX:StartFlightRecording=filename=$BENCH_JFR,settings=profile,dumponexit=true"
[ -n "$JAVA_OPTS_BENCH" ] && SERVICE_ENV+=("JAVA_TOOL_OPTIONS=$JAVA_OPTS_BENCH")
start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
KEY=$(bootstrap_key "$DATA" server)
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps limit 1")
if [ -n "${BENCH_PGSS:-}" ]; then
  # pg_stat_statements needs a preloaded library: set it, restart the service and its PostgreSQL
  $PG -c "alter system set shared_preload_libraries = 'pg_stat_statements'${BENCH_EXPLAIN:+, 'auto_explain'}" >/dev/null
  # BENCH_PGSS=all: statements run by functions and triggers get their own rows too (also still counted in their caller's)
  [ "$BENCH_PGSS" = all ] && $PG -c "alter system set pg_stat_statements.track = 'all'" >/dev/null
  $PG -c "alter system set pg_stat_statements.track_planning = on" >/dev/null # plan ms beside execution ms
  if [ -n "${BENCH_EXPLAIN:-}" ]; then # plans (row counts and buffers, no timing) of statements slower than this many ms, in service.log
    $PG -c "alter system set auto_explain.log_min_duration = '${BENCH_EXPLAIN}ms'" -c "alter system set auto_explain.log_analyze = on" \
        -c "alter system set auto_explain.log_buffers = on" -c "alter system set auto_explain.log_timing = off" \
        -c "alter system set auto_explain.log_nested_statements = on" >/dev/null
  fi
  stop_service
  pgpid=$(postmaster_pid "$DATA"); [ -n "$pgpid" ] && kill -INT "$pgpid" 2>/dev/null || true
  for _ in $(seq 1 60); do [ -z "$pgpid" ] || ! kill -0 "$pgpid" 2>/dev/null && break; sleep 0.5; done
  start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
  PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
  $PG -c "create extension if not exists pg_stat_statements" >/dev/null
fi
api() { # api METHOD PATH [BODY]
  curl -s -X "$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" ${3:+-d "$3"} "http://127.0.0.1:$PORT$2"
}
api PATCH /v1/app/settings "$(cat "$PEERS/settings.json")" >/dev/null
if [ -n "${BENCH_CAP:-}" ]; then
  api PATCH /v1/app/settings '{"frequency_cap":{"limit":100,"window_seconds":86400}}' | grep -q '"frequency_cap"' \
    || { echo "could not set the frequency cap" >&2; exit 1; }
  echo "frequency cap on: 100 per user per day"
fi

echo "loading $DEVICES devices ($MIX) ..."
IOS=$DEVICES; ANDROID=0
if [ "$MIX" = thirds ]; then IOS=$((DEVICES / 3)); ANDROID=$((DEVICES - IOS - WEB)); fi
# devices registered over time (distinct created_at, as real registrations have): the fan-out pages by
# it. In transactions of LOAD_BATCH rows: each inserted device also updates its organisation's
# active-device counter row (a deferred per-row trigger), and N updates of one row in one transaction
# cost PostgreSQL about N^2 (each walks the row's versions made by the same transaction): 300,000
# devices in one statement took over 6 minutes, in batches of 20,000 a few seconds each.
LOAD_BATCH=20000
# Each device's id as the checkout under test makes it at registration: time-ordered, of its created_at,
# where the schema has storage_uuid7 (V56 and later), else random (a74a18e and other older commits
# compared back to back). BENCH_DEVICE_IDS=random loads random ids anyway (devices registered before V56).
if [ "${BENCH_DEVICE_IDS:-}" != random ] && [ "$($PG -Atc "select to_regprocedure('storage_uuid7(timestamptz)') is not null")" = t ]; then
  device_id() { echo "storage_uuid7($1)"; }
else
  device_id() { echo "gen_random_uuid()"; }
fi
echo "device ids: $(device_id created_at)"
batches() { # batches TOTAL: "FIRST LAST" per batch of LOAD_BATCH
  local lo; for ((lo = 1; lo <= $1; lo += LOAD_BATCH)); do echo "$lo $((lo + LOAD_BATCH - 1 < $1 ? lo + LOAD_BATCH - 1 : $1))"; done
}
{
  batches "$IOS" | while read -r lo hi; do cat <<SQL
insert into devices (id, app_id, platform, token, token_hash, created_at)
select $(device_id c), '$APP', 'ios', encode(sha256(('ios-' || g)::bytea), 'hex'), sha256(('ios-' || g)::bytea), c
from (select g, now() - interval '1 day' + g * interval '1 millisecond' as c from generate_series($lo, $hi) g) s;
SQL
  done
  batches "$ANDROID" | while read -r lo hi; do cat <<SQL
insert into devices (id, app_id, platform, token, token_hash, created_at)
select $(device_id c), '$APP', 'android', 'fcm-bench-' || g, sha256(('fcm-bench-' || g)::bytea), c
from (select g, now() - interval '2 days' + g * interval '1 millisecond' as c from generate_series($lo, $hi) g) s;
SQL
  done
  cat <<SQL
create temp table web_subscriptions (n serial, token text);
\copy web_subscriptions (token) from '$PEERS/web-subscriptions.txt'
SQL
  batches "$WEB" | while read -r lo hi; do cat <<SQL
insert into devices (id, app_id, platform, token, token_hash, created_at)
select $(device_id c), '$APP', 'web', token, sha256(convert_to(token::jsonb ->> 'endpoint', 'UTF8')), c
from (select token, now() - interval '3 days' + n * interval '1 millisecond' as c
      from web_subscriptions where n between $lo and $hi) s;
SQL
  done
  echo "analyze devices;"
} | $PG
if [ -n "${BENCH_LOCAL_TIME:-}" ]; then
  $PG -c "update devices set timezone = (array['Europe/Berlin','Europe/Paris','Europe/Madrid','Africa/Lagos','Europe/Rome','Europe/Oslo'])[1 + abs(hashtext(id::text)) % 6] where app_id = '$APP'; analyze devices;"
fi
PROBE=$($PG -Atc "select id from devices where app_id = '$APP' and platform = 'ios' order by created_at limit 1")
echo "$($PG -Atc "select count(*) from devices where app_id = '$APP'") devices; transactional probes go to one of them"

# probes COUNT INTERVAL_MS TIMES_FILE [GO_FILE STOP_FILE]: single-device transactional sends to the
# probe device from their own JVM (bench/ProbeClient: one kept-alive connection, no process start
# between a request and its timestamps); each appends "NUMBER POST_US RESPONSE_US NOTIFICATION_ID" to
# TIMES_FILE (epoch microseconds as the request left and as its 202 arrived). Its body carries
# "probe-NUMBER", which the APNs peer logs with its own clock as it accepts the push (arrivals.txt):
# 202 -> accepted by the provider is the peer's time minus the 202's.
probes() {
  "$JAVA" -Xmx64m -XX:TieredStopAtLevel=1 -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
    dev.pushservice.bench.ProbeClient "http://127.0.0.1:$PORT" "$KEY" "$PROBE" "$@" 2>>"$DATA/probes.log"
}
# peer_latency TIMES_FILE LABEL: POST -> 202 and 202 -> accepted by the APNs peer (p50, p99, max) of those probes
peer_latency() {
  [ -s "$1" ] || return 0
  sleep 0.3 # the peer writes its arrivals every 100 ms
  [ -s "$PEERS/arrivals.txt" ] || { echo "$2: no probe reached the peer"; return 0; }
  local pairs; pairs=$(awk 'NR == FNR { at[$2] = $1; next } ($1 in at) { print ($3 - $2) / 1000, (at[$1] - $3) / 1000 }' \
    "$PEERS/arrivals.txt" "$1")
  [ -n "$pairs" ] || { echo "$2: no probe reached the peer"; return 0; }
  # nearest-rank p50, p99 and the maximum of column $1 of the pairs
  ranks() { echo "$pairs" | awk -v c="$1" '{ print $c }' | sort -n | awk '{ v[NR] = $1 } END {
      p50 = int((NR + 1) / 2); p99 = int(NR * 0.99); if (p99 < NR * 0.99) p99++; if (p99 < 1) p99 = 1
      printf "%d %.1f %.1f %.1f\n", NR, v[p50], v[p99], v[NR] }'; }
  read -r n peer50 peer99 peermax < <(ranks 2)
  read -r _ post50 post99 _ < <(ranks 1)
  echo "$2: $n sends, 202 -> accepted by the APNs peer p50 $peer50 ms, p99 $peer99 ms, max $peermax ms; POST -> 202 p50 $post50 ms, p99 $post99 ms"
}
echo "warm-up: 20 transactional sends ..."
probes 20 200 "$DATA/idle-probe-times.txt"
cut -d' ' -f4 "$DATA/idle-probe-times.txt" >"$DATA/idle-probes.txt"
sleep 2
peer_latency "$DATA/idle-probe-times.txt" "transactional on an idle service (20 warm-up sends)"
ids=$(sed "s/.*/'&'/" "$DATA/idle-probes.txt" | paste -sd, -)
$PG -At -F ' ' -c "select percentile_cont(0.5) within group (order by extract(epoch from r.updated_at - n.created_at) * 1000),
    percentile_cont(0.5) within group (order by extract(epoch from n.processing_at - n.created_at) * 1000)
    from notifications n join notification_recipient_states r on r.notification_id = n.id
    where n.id in ($ids) and r.status = 'accepted'" | while read -r p50 started; do
  printf 'transactional on an idle service (last 20 of the warm-up): created -> recorded accepted p50 %.0f ms (fan-out started after %.0f ms)\n' "$p50" "$started"
done

terminal() { $PG -Atc "select status in ('completed', 'failed', 'cancelled') from notifications where id = '$1'"; }
counts() { cat "$PEERS/counts.txt"; }
for _ in $(seq 1 "${BENCH_WARMUP:-0}"); do
  # a long-running service has compiled its hot paths: unmeasured bulk sends to every device first,
  # so the measured one does not pay for the JIT compiling the fan-out and delivery code
  WARM=$(api POST /v1/notifications '{"title":"Warm-up","body":"not measured","priority":"bulk","target":{"type":"all"}}' \
    | grep -o '"notification_id":"[^"]*"' | cut -d'"' -f4)
  echo "warm-up: one bulk send to all $DEVICES devices (not measured) ..."
  while [ "$(terminal "$WARM")" != t ]; do sleep 0.5; done
  $PG -c "vacuum analyze notification_recipients" >/dev/null
  sleep 3
done
if [ "${BENCH_WARMUP:-0}" -gt 0 ]; then
  probes 20 200 "$DATA/warm-probe-times.txt"
  peer_latency "$DATA/warm-probe-times.txt" "transactional on the warmed, idle service"
  sleep 1
fi
# the probes during the fan-out: their JVM starts now, and waits for the bulk send
probes 0 1000 "$DATA/probe-times.txt" "$DATA/probes.go" "$DATA/probes.stop" &
PROBES_PID=$!
sleep 2
PGPID=$(postmaster_pid "$DATA")
s0=$(cpu_ticks "$SERVICE_PID"); p0=$(cpu_ticks "$PGPID"); q0=$(cpu_ticks "$PEERS_PID")
[ -n "${BENCH_THREADS:-}" ] && thread_ticks "$SERVICE_PID" >"$DATA/threads.0"
WAL0=$($PG -Atc "select pg_current_wal_lsn()")
read -r a0 f0 w0 < <(counts)
# autovacuum and autoanalyze runs per table, to name the ones that ran during the measured send (their
# CPU counts as PostgreSQL's: a suspect when PostgreSQL's CPU per recipient jumps)
vacuums() { $PG -At -F ' ' -c "select relname, autovacuum_count, autoanalyze_count from pg_stat_user_tables order by 1"; }
vacuums >"$DATA/vacuums.before"
EXTRA=
if [ -n "${BENCH_LOCAL_TIME:-}" ]; then
  LOCAL=$(TZ=Europe/Berlin date -d '+2 min' +%H:%M)
  EXTRA=",\"local_delivery_time\":\"$LOCAL\""
  echo "local delivery time $LOCAL in each device's zone (about two minutes from now)"
fi
[ -n "${BENCH_PGSS:-}" ] && $PG -c "select pg_stat_statements_reset()" >/dev/null
JCMD="$(dirname "$(readlink -f "$(find_java)")")/jcmd"
[ -n "${BENCH_ASPROF:-}" ] && "$JCMD" "$SERVICE_PID" JVMTI.agent_load "$BENCH_ASPROF" "\"start,event=cpu,interval=1ms,threads\"" >/dev/null
if [ -n "${BENCH_PERF:-}" ]; then # every process's samples during the measured send, for `perf report --comm postgres`
  perf record -a -F 999 -o "$BENCH_PERF" >"$DATA/perf.log" 2>&1 &
  PERF_PID=$!; sleep 0.5
fi
BULK=$(api POST /v1/notifications "{\"title\":\"Sale\",\"body\":\"Everything must go\",\"priority\":\"bulk\",\"target\":{\"type\":\"all\"}$EXTRA}" \
  | grep -o '"notification_id":"[^"]*"' | cut -d'"' -f4)
echo "bulk notification $BULK"
touch "$DATA/probes.go"
stop_probes() { # the probes' ids (those answered with a 202) into probes.txt
  [ -n "${PROBES_PID:-}" ] || return 0
  touch "$DATA/probes.stop"; wait "$PROBES_PID" 2>/dev/null || true; PROBES_PID=
  [ -s "$DATA/probe-times.txt" ] && cut -d' ' -f4 "$DATA/probe-times.txt" >"$DATA/probes.txt" || true
}

if [ "$CRASH" = crash ]; then
  # kill once about half the recipients are accepted
  half=$((DEVICES / 2))
  while [ "$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$BULK' and status = 'accepted'")" -lt "$half" ]; do sleep 0.2; done
  SK=$(cpu_ticks "$SERVICE_PID") # the killed process's CPU: the restarted one counts from zero
  kill -9 "$SERVICE_PID"; wait "$SERVICE_PID" 2>/dev/null || true
  stop_probes
  sleep 1
  read -r ak fk wk < <(counts)
  # claimed rows still sending, and recipients handed over without a row and not recorded yet
  SENDING=$($PG -Atc "select (select count(*) from notification_recipient_states where notification_id = '$BULK' and status = 'sending')
                            + (select coalesce(sum(handed - recorded), 0) from notification_handovers where notification_id = '$BULK')")
  echo "killed (-9) with $($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$BULK' and status = 'accepted'") accepted, $SENDING in flight (sending); the peers had received $(( ak + fk + wk - a0 - f0 - w0 ))"
  start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
  echo "restarted"
fi

while [ "$(terminal "$BULK")" != t ]; do sleep 0.2; done
stop_probes
sleep 1
[ -n "${PERF_PID:-}" ] && kill -INT "$PERF_PID" && wait "$PERF_PID" 2>/dev/null && echo "perf samples of the measured send: $BENCH_PERF"
s1=$(cpu_ticks "$SERVICE_PID"); p1=$(cpu_ticks "$PGPID"); q1=$(cpu_ticks "$PEERS_PID")
[ -n "${BENCH_THREADS:-}" ] && [ "$CRASH" != crash ] && thread_ticks "$SERVICE_PID" >"$DATA/threads.1"
WAL=$($PG -Atc "select pg_wal_lsn_diff(pg_current_wal_lsn(), '$WAL0')")
[ -n "${BENCH_ASPROF:-}" ] && "$JCMD" "$SERVICE_PID" JVMTI.agent_load "$BENCH_ASPROF" "\"stop,file=$DATA/profile.txt,collapsed\"" >/dev/null \
  && cp "$DATA/profile.txt" "${BENCH_ASPROF_OUT:-/tmp/fanout-profile.txt}" && echo "profile of the measured send: ${BENCH_ASPROF_OUT:-/tmp/fanout-profile.txt}"
read -r a1 f1 w1 < <(counts)
received=$(( a1 + f1 + w1 - a0 - f0 - w0 ))
VACUUMED=$(vacuums | join "$DATA/vacuums.before" - \
  | awk '$4 > $2 || $5 > $3 { printf "%s%s (%d vacuum, %d analyze)", sep, $1, $4 - $2, $5 - $3; sep = ", " }')

echo
$PG -At -F ' ' <<SQL | while read -r n secs first status; do
with s as (select n.*, greatest(n.created_at, (select min(r.due_at) from notification_recipient_states r
                                                    where r.notification_id = n.id)) as start
           from notifications n where id = '$BULK')
select recipient_count, extract(epoch from finished_at - start),
       (select extract(epoch from min(r.updated_at) - s.start) * 1000 from notification_recipient_states r
        where r.notification_id = s.id and r.status = 'accepted'), status
from s;
SQL
  FROM="the 202"; [ -n "${BENCH_LOCAL_TIME:-}" ] && FROM="the recipients' local delivery time"
  printf 'bulk: %s recipients, %s, %.2f s from %s to the last terminal recipient: %.0f recipients/s; first accepted push after %.0f ms\n' \
    "$n" "$status" "$secs" "$FROM" "$(echo "$n / $secs" | bc -l)" "$first"
done
$PG -At -F ' ' -c "select status, count(*) from notification_recipient_states where notification_id = '$BULK' group by status order by 1" \
  | sed 's/^/  recipients /'
echo "  the peers received $received pushes (APNs $((a1 - a0)), FCM $((f1 - f0)), Web Push $((w1 - w0)))"
if [ "$CRASH" = crash ]; then
  accepted=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$BULK' and status = 'accepted'")
  echo "  crash: $SENDING in flight at the kill; pushes received beyond one per accepted recipient: $((received - accepted - $(wc -l <"$DATA/probes.txt" 2>/dev/null || echo 0)))" \
       "(probes are counted out; at most the in-flight ones may get it twice)"
fi
if [ -n "${BENCH_PGSS:-}" ]; then
  echo "pg_stat_statements from the 202 to the end (top ${BENCH_PGSS_TOP:-12} by total time): calls, rows, mean ms, total ms, planning ms, statement"
  $PG -At -F ' | ' -c "select sum(total_exec_time)::int || ' ms executing, ' || sum(total_plan_time)::int || ' ms planning in all'
      from pg_stat_statements" | sed 's/^/  /'
  $PG -At -F ' | ' -c "select calls, rows, round(mean_exec_time::numeric, 3), round(total_exec_time::numeric), round(total_plan_time::numeric),
      left(regexp_replace(query, '\s+', ' ', 'g'), 110) from pg_stat_statements
      order by total_exec_time desc limit ${BENCH_PGSS_TOP:-12}" | sed 's/^/  /'
fi
RUNNING=$($PG -At -c "select string_agg(query, ', ') from pg_stat_activity where backend_type = 'autovacuum worker'")
echo "  autovacuum during the measured send: ${VACUUMED:-none} finished${RUNNING:+; still running: $RUNNING}"
hz=$(getconf CLK_TCK)
# after a crash: the killed process's share plus all of the restarted one (its start-up included)
SVC=service; [ "$CRASH" = crash ] && s1=$((SK + s1)) && SVC="service (killed and restarted process)"
awk -v n="$DEVICES" -v s=$((s1 - s0)) -v p=$((p1 - p0)) -v q=$((q1 - q0)) -v hz="$hz" -v svc="$SVC" 'BEGIN {
  printf "CPU per recipient: %s %.0f µs, PostgreSQL %.0f µs, peers %.0f µs\n", svc, s/hz*1e6/n, p/hz*1e6/n, q/hz*1e6/n }'
[ -s "$DATA/threads.1" ] && thread_report "$DATA/threads.0" "$DATA/threads.1" "$DEVICES" recipient
awk -v n="$DEVICES" -v w="$WAL" 'BEGIN { printf "WAL per recipient: %.0f bytes (%.1f MiB in all, autovacuum during the measured send included)\n", w / n, w / 1048576 }'
if [ -s "$DATA/probes.txt" ]; then
  ids=$(sed "s/.*/'&'/" "$DATA/probes.txt" | paste -sd, -)
  $PG -At -F ' ' <<SQL | while read -r count p50 p99 max started started99; do
select count(*), percentile_cont(0.5) within group (order by ms), percentile_cont(0.99) within group (order by ms), max(ms),
       percentile_cont(0.5) within group (order by started), percentile_cont(0.99) within group (order by started)
from (select extract(epoch from r.updated_at - n.created_at) * 1000 as ms,
             extract(epoch from n.processing_at - n.created_at) * 1000 as started
      from notifications n join notification_recipient_states r on r.notification_id = n.id
      where n.id in ($ids) and r.status = 'accepted') t;
SQL
    printf 'transactional during the fan-out: %s sends, created -> recorded accepted p50 %.0f ms, p99 %.0f ms, max %.0f ms (fan-out started after %.0f ms p50, %.0f ms p99)\n' \
      "$count" "$p50" "$p99" "$max" "$started" "$started99"
  done
  peer_latency "$DATA/probe-times.txt" "transactional during the fan-out"
fi
