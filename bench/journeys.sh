#!/usr/bin/env bash
# Journeys benchmark: the service (jar) on its embedded PostgreSQL and a local APNs peer in its own
# JVM (bench/JourneyPeers, which logs every push with its time, device token and title). Asserts nothing.
#   bench/journeys.sh [users=10000] [waiting=100000] [crash]
# 1. USERS known users with one iOS device each, and an active journey triggered by the custom event
#    bench_signup: push "step-1" -> wait 1 s -> push "step-2" -> exit (reentry_limit 1). One event per
#    user through POST /v1/events (64 at a time, bench/JourneyLoad). Prints the time from the last 202 to
#    the last step-1 push accepted at the peer and, per device, from its event to its step-1 push and
#    from its timer (the runner's batch that sent step-1 set it: that notification's creation + 1 s)
#    to its step-2 push at the peer; CPU per user from the first event to the end.
# 2. Registration and notification-creation latency (sequential requests, p50/p99) without and then
#    with WAITING executions waiting on a 31-day timer (rows inserted with SQL).
# crash: kill -9 the service once half the events are accepted, start it again, let everything run out,
#    and count executions lost (an accepted event whose user has no execution) and steps sent twice
#    (a device with more than one push of a step). Part 2 is skipped.
# WARM=2000 (default) events first go into a journey like it, and the run waits for both of their pushes
# (JIT compilation, pools); WARM=0 measures a cold service. BENCH_KEEP=1 keeps the data directory.
source "$(dirname "$0")/lib.sh"
USERS=${1:-10000}
WAITING=${2:-100000}
CRASH=${3:-}
PORT=${PORT:-18294}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
DATA=$(mktemp -d /tmp/push-bench-journeys.XXXXXX)
PEERS=$DATA/peers
cleanup() {
  stop_service
  [ -n "${LOAD_PID:-}" ] && kill "$LOAD_PID" 2>/dev/null || true
  [ -n "${PEERS_PID:-}" ] && kill "$PEERS_PID" 2>/dev/null && wait "$PEERS_PID" 2>/dev/null || true
  stop_postgres "$DATA"
  [ -n "${BENCH_KEEP:-}" ] && echo "data kept in $DATA" || rm -rf "$DATA"
}
trap cleanup EXIT

build_jar
(cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
  && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
JAVA=$(find_java)
CP="$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")"
"$JAVA" --enable-native-access=ALL-UNNAMED -Xms256m -Xmx1g -cp "$CP" dev.pushservice.bench.JourneyPeers "$PEERS" \
  >"$DATA/peers.log" 2>&1 &
PEERS_PID=$!
for _ in $(seq 1 120); do [ -s "$PEERS/peers.env" ] && [ -s "$PEERS/counts.txt" ] && break; sleep 1; done
[ -s "$PEERS/peers.env" ] || { echo "peer did not start; see $DATA/peers.log" >&2; cat "$DATA/peers.log" >&2; exit 1; }
load() { "$JAVA" -Xmx512m -cp "$CP" dev.pushservice.bench.JourneyLoad "$@"; }

# shellcheck disable=SC2046
# a delivery lease of 20 s (default 2 min): pushes in flight at a kill are claimed again within the run
SERVICE_ENV=(PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000
  PUSH_RATE_LIMIT_APP_BURST=1000000 PUSH_RATE_LIMIT_ORG_BURST=1000000 PUSH_DELIVERY_LEASE=20s $(cat "$PEERS/peers.env"))
start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
KEY=$(bootstrap_key "$DATA" server)
PUBLIC=$(bootstrap_key "$DATA" public)
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps limit 1")
BASE="http://127.0.0.1:$PORT"
api() { # api METHOD PATH [BODY]
  curl -s -X "$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" ${3:+-d "$3"} "$BASE$2"
}
api PATCH /v1/app/settings "$(cat "$PEERS/settings.json")" >/dev/null

echo "loading $USERS known users with one iOS device each ..."
$PG <<SQL
insert into users (id, app_id, external_user_id)
select gen_random_uuid(), '$APP', 'bench-user-' || g from generate_series(1, $USERS) g;
insert into devices (id, app_id, platform, token, token_hash, user_id, created_at)
select gen_random_uuid(), '$APP', 'ios', encode(sha256(('ios-' || u.external_user_id)::bytea), 'hex'),
       sha256(('ios-' || u.external_user_id)::bytea), u.id, now() - interval '1 day'
from users u where u.app_id = '$APP' and u.external_user_id like 'bench-user-%';
analyze users; analyze devices;
SQL
$PG -Atc "select id from devices where app_id = '$APP' and user_id is not null order by random()" >"$DATA/devices.txt"

# journey(NAME EVENT NODES_JSON START): creates an active journey through the API; prints its id
journey() {
  local body="{\"name\":\"$1\",\"status\":\"active\",\"reentry_limit\":1,\"definition\":{\"trigger\":{\"type\":\"custom_event\",\"event_name\":\"$2\"},\"start\":\"$4\",\"nodes\":$3}}"
  local answer; answer=$(api POST /v1/journeys "$body")
  local id; id=$(echo "$answer" | grep -o '"journey_id":"[^"]*"' | head -n 1 | cut -d'"' -f4)
  if [ -z "$id" ] && echo "$answer" | grep -q '"not_found"'; then
    # a build without the journeys API: the rows it would write
    id=$(cat /proc/sys/kernel/random/uuid)
    echo "(no POST /v1/journeys in this build: journey $1 written with SQL)" >&2
    $PG -c "insert into journeys (id, app_id, name, status, reentry_limit, current_version, trigger_type, trigger_event_name, created_at, updated_at)
            values ('$id', '$APP', '$1', 'active', 1, 1, 'custom_event', '$2', now(), now());
            insert into journey_versions (journey_id, version, name, status, reentry_limit, definition, created_at)
            values ('$id', 1, '$1', 'active', 1, '{\"trigger\":{\"type\":\"custom_event\",\"event_name\":\"$2\"},\"start\":\"$4\",\"nodes\":$3}'::jsonb, now())" >&2
  fi
  [ -n "$id" ] || { echo "POST /v1/journeys failed: $answer" >&2; exit 1; }
  echo "$id"
}
NODES='{"first":{"type":"push","content":{"title":"step-1","body":"Welcome"},"next":"pause"},"pause":{"type":"wait","seconds":1,"next":"second"},"second":{"type":"push","content":{"title":"step-2","body":"Still there?"},"next":"done"},"done":{"type":"exit"}}'
JOURNEY=$(journey "bench push-wait-push" bench_signup "$NODES" first)
echo "journey $JOURNEY: push step-1 -> wait 1 s -> push step-2"

pushes() { cat "$PEERS/counts.txt"; }
step_count() { grep -c " $1\$" "$PEERS/pushes.txt" 2>/dev/null || true; }
# waits until the peer has N pushes titled $1 (or nothing new arrives for 60 s)
await_step() {
  local want=$2 seen=-1 idle=0 n
  while true; do
    n=$(step_count "$1")
    [ "$n" -ge "$want" ] && return 0
    if [ "$n" = "$seen" ]; then idle=$((idle + 1)); [ "$idle" -ge 600 ] && { echo "  $1: only $n of $want after 60 s without progress"; return 0; }; else idle=0; seen=$n; fi
    sleep 0.1
  done
}
WARM=${WARM:-2000}
if [ "$WARM" -gt 0 ]; then
  WARM_JOURNEY=$(journey "bench warm-up" bench_warmup "${NODES//step-/warm-}" first)
  head -n "$WARM" "$DATA/devices.txt" >"$DATA/warm.txt"
  echo "warm-up: $WARM events into a journey like it (JIT, pools), until both of its pushes arrived ..."
  load events "$BASE" "$PUBLIC" "$DATA/warm.txt" bench_warmup 64 >/dev/null
  await_step warm-1 "$WARM"; await_step warm-2 "$WARM"; sleep 2
fi
p0=$(pushes)
s0=$(cpu_ticks "$SERVICE_PID"); pg0=$(cpu_ticks "$(postmaster_pid "$DATA")"); q0=$(cpu_ticks "$PEERS_PID")
echo "sending $USERS custom events (64 concurrent requests) ..."
load events "$BASE" "$PUBLIC" "$DATA/devices.txt" bench_signup 64 >"$DATA/load.out" 2>&1 &
LOAD_PID=$!
if [ "$CRASH" = crash ]; then
  half=$((USERS / 2))
  accepted_so_far() { if [ -f "$DATA/devices.txt.accepted" ]; then wc -l <"$DATA/devices.txt.accepted"; else echo 0; fi; }
  while [ "$(accepted_so_far)" -lt "$half" ]; do sleep 0.05; done
  kill -9 "$SERVICE_PID"; wait "$SERVICE_PID" 2>/dev/null || true
  echo "killed (-9) after $(wc -l <"$DATA/devices.txt.accepted") accepted events; the peer had $(( $(pushes) - p0 )) pushes of this journey (both steps)"
fi
wait "$LOAD_PID"; LOAD_PID=
read -r _ accepted _ refused _ first _ last <"$DATA/load.out"
echo "events: $accepted accepted, $refused refused or failed, $(( last - first )) ms from the first request to the last 202 ($(( accepted * 1000 / (last - first + 1) ))/s)"
if [ "$CRASH" = crash ]; then
  start_service "$PORT" "$DATA" "${SERVICE_ENV[@]}"
  echo "restarted"
fi
EXPECTED=$($PG -Atc "select count(*) from journey_executions where journey_id = '$JOURNEY'")
echo "executions started: $EXPECTED"

await_step step-1 "$EXPECTED"
await_step step-2 "$EXPECTED"
sleep 2

s1=$(cpu_ticks "$SERVICE_PID"); pg1=$(cpu_ticks "$(postmaster_pid "$DATA")"); q1=$(cpu_ticks "$PEERS_PID")
# per device: its event's receipt, its pushes at the peer, and the timer of its wait (the step-1
# notification's creation, in the runner's batch that also set the timer, plus 1 s)
$PG -At <<SQL
create temp table pushes (at_us bigint, token text, title text);
\copy pushes from '$PEERS/pushes.txt' with (delimiter ' ')
create temp table per_device as
with ev as (select device_id, min(received_at) as at from events
            where app_id = '$APP' and event_name = 'bench_signup' group by device_id),
     p1 as (select token, min(to_timestamp(at_us / 1e6)) as at from pushes where title = 'step-1' group by token),
     p2 as (select token, min(to_timestamp(at_us / 1e6)) as at from pushes where title = 'step-2' group by token),
     timers as (select r.device_id, min(n.created_at) + interval '1 second' as at
                from notifications n join notification_recipient_states r on r.notification_id = n.id
                where n.app_id = '$APP' and n.content ->> 'title' = 'step-1' group by r.device_id)
select d.id as device_id, ev.at as event_at, p1.at as step1_at, p2.at as step2_at, timers.at as timer_at
from devices d
left join ev on ev.device_id = d.id
left join p1 on p1.token = d.token
left join p2 on p2.token = d.token
left join timers on timers.device_id = d.id
where d.app_id = '$APP' and d.user_id is not null;
select format('step-1: %s pushes accepted at the peer; the last %s s after the last event''s 202; per device, event -> step-1: p50 %s ms, p99 %s ms, max %s ms',
              count(step1_at), round(extract(epoch from max(step1_at) - to_timestamp($last / 1000.0))::numeric, 2),
              round(percentile_cont(0.5) within group (order by extract(epoch from step1_at - event_at) * 1000)::numeric),
              round(percentile_cont(0.99) within group (order by extract(epoch from step1_at - event_at) * 1000)::numeric),
              round(max(extract(epoch from step1_at - event_at) * 1000)::numeric))
from per_device;
select format('step-2: %s pushes accepted at the peer; per device, timer -> step-2: p50 %s ms, p99 %s ms, max %s ms',
              count(step2_at),
              round(percentile_cont(0.5) within group (order by extract(epoch from step2_at - timer_at) * 1000)::numeric),
              round(percentile_cont(0.99) within group (order by extract(epoch from step2_at - timer_at) * 1000)::numeric),
              round(max(extract(epoch from step2_at - timer_at) * 1000)::numeric))
from per_device;
select format('steps received twice by a device: step-1 %s, step-2 %s',
              count(*) filter (where title = 'step-1') - count(distinct token) filter (where title = 'step-1'),
              count(*) filter (where title = 'step-2') - count(distinct token) filter (where title = 'step-2'))
from pushes;
SQL
[ "$CRASH" = crash ] || echo "events -> last step-2: CPU per user (one event, two pushes): service $(( (s1 - s0) * 1000000 / $(getconf CLK_TCK) / USERS )) µs, PostgreSQL $(( (pg1 - pg0) * 1000000 / $(getconf CLK_TCK) / USERS )) µs, APNs peer $(( (q1 - q0) * 1000000 / $(getconf CLK_TCK) / USERS )) µs"
$PG -At -F ' ' -c "select status, count(*) from journey_executions where journey_id = '$JOURNEY' group by 1 order by 1" \
  | sed 's/^/  executions /'

$PG -At -F ' ' -c "select n.content ->> 'title', r.status, count(*) from notifications n
    join notification_recipient_states r on r.notification_id = n.id
    where n.app_id = '$APP' and n.content ->> 'title' in ('step-1', 'step-2') group by 1, 2 order by 1, 2" \
  | sed 's/^/  recipients of /'
if [ "$CRASH" = crash ]; then
  $PG <<SQL
create temp table accepted_devices (device_id uuid);
\copy accepted_devices from '$DATA/devices.txt.accepted'
select 'crash: ' || count(*) || ' events answered 202; executions lost (an accepted event whose user has no execution): '
       || count(*) filter (where not exists (select 1 from journey_executions e join devices d on d.user_id = e.user_id
                                             where d.id = a.device_id and e.journey_id = '$JOURNEY'))
from accepted_devices a;
SQL
  exit 0
fi

echo
PROBE=$($PG -Atc "select id from devices where app_id = '$APP' order by created_at limit 1")
SAMPLES=${SAMPLES:-500}
echo "latency, $SAMPLES sequential requests each (after a warm-up of 200) ..."
load latency "$BASE" "$PUBLIC" "$KEY" "$PROBE" 200 >/dev/null
read -r _ r50 r99 _ n50 n99 < <(load latency "$BASE" "$PUBLIC" "$KEY" "$PROBE" "$SAMPLES")
echo "without waiting executions: registration p50 $r50 ms, p99 $r99 ms; notification creation p50 $n50 ms, p99 $n99 ms"

WAIT_NODES='{"hold":{"type":"wait","seconds":2678400,"next":"done"},"done":{"type":"exit"}}'
WAITER=$(journey "bench long wait" bench_never "$WAIT_NODES" hold)
$PG <<SQL
insert into journey_executions (id, app_id, journey_id, version, user_id, status, node_id, step, due_at, entered_at, updated_at)
select storage_uuid7(now(), null), '$APP', '$WAITER', 1, gen_random_uuid(), 'waiting', 'hold', 1,
       now() + interval '30 days' + g * interval '1 millisecond', now(), now()
from generate_series(1, $WAITING) g;
analyze journey_executions;
SQL
echo "$($PG -Atc "select count(*) from journey_executions where status = 'waiting'") executions waiting"
sleep 5
read -r _ r50 r99 _ n50 n99 < <(load latency "$BASE" "$PUBLIC" "$KEY" "$PROBE" "$SAMPLES")
echo "with them:                  registration p50 $r50 ms, p99 $r99 ms; notification creation p50 $n50 ms, p99 $n99 ms"
