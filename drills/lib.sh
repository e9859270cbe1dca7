# Shared helpers for the drills that run the service on the machine's PostgreSQL and Redis (several
# instances on one database): a fresh database per run, the local peers in their own JVM, instances
# by name, devices loaded in batches, the APNs and FCM peers' counts.
# shellcheck shell=bash
source "$(dirname "${BASH_SOURCE[0]}")/../bench/lib.sh"
PGHOST_DRILL=${PGHOST_DRILL:-127.0.0.1}
# REDIS_URL_DRILL= (set and empty): instances without Redis (in-process rate limits), as one instance runs
REDIS_URL_DRILL=${REDIS_URL_DRILL-redis://127.0.0.1:6379}
declare -A PIDS=()  # instance name -> pid
declare -A PORTS=() # instance name -> port

# drill_setup NAME: DATA (a temporary directory), DB (a fresh database on the machine's PostgreSQL),
# PG (psql on it), SECRET (one PUSH_SECRET_KEY for every instance); the jar and test classes built.
drill_setup() {
  command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
  pg_isready -q -h "$PGHOST_DRILL" -p 5432 || { echo "the machine's PostgreSQL is not running at $PGHOST_DRILL:5432" >&2; exit 1; }
  DATA=$(mktemp -d "/tmp/push-drill-$1.XXXXXX")
  PEERS=$DATA/peers
  DB="drill_$(date +%Y%m%d%H%M%S)_$$"
  createdb -h "$PGHOST_DRILL" -U postgres "$DB"
  PG="psql -X -q -v ON_ERROR_STOP=1 -h $PGHOST_DRILL -U postgres -d $DB"
  SECRET=$(head -c 32 /dev/urandom | base64)
  build_jar
  (cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
    && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
  JAVA=$(find_java)
}

# drill_cleanup: every instance and the peers stopped (-9 if they linger), the database dropped.
drill_cleanup() {
  local name
  for name in "${!PIDS[@]}"; do kill "${PIDS[$name]}" 2>/dev/null || true; done
  [ -n "${PEERS_PID:-}" ] && kill "$PEERS_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do
    local alive=
    for name in "${!PIDS[@]}"; do kill -0 "${PIDS[$name]}" 2>/dev/null && alive=1; done
    [ -n "${PEERS_PID:-}" ] && kill -0 "$PEERS_PID" 2>/dev/null && alive=1
    [ -z "$alive" ] && break; sleep 0.1
  done
  for name in "${!PIDS[@]}"; do kill -9 "${PIDS[$name]}" 2>/dev/null || true; done
  [ -n "${PEERS_PID:-}" ] && kill -9 "$PEERS_PID" 2>/dev/null || true
  if [ -n "${DB:-}" ] && pg_isready -q -h "$PGHOST_DRILL" -p 5432; then
    dropdb -h "$PGHOST_DRILL" -U postgres --if-exists --force "$DB" 2>/dev/null || true
  fi
  if [ -n "${DATA:-}" ]; then [ -n "${DRILL_KEEP:-}" ] && echo "data kept in $DATA" || rm -rf "$DATA"; fi
}

# start_peers [relay]: bench/FanoutPeers in its own JVM (relay: APNs behind a relay, distinct APNs
# tokens counted in apns-tokens.txt).
start_peers() {
  "$JAVA" --enable-native-access=ALL-UNNAMED -Xms128m -Xmx768m \
    -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
    dev.pushservice.bench.FanoutPeers "$PEERS" 0 "$@" >"$DATA/peers.log" 2>&1 &
  PEERS_PID=$!
  for _ in $(seq 1 120); do [ -s "$PEERS/peers.env" ] && [ -s "$PEERS/fcm.txt" ] && break; sleep 1; done
  [ -s "$PEERS/peers.env" ] || { echo "peers did not start; see $DATA/peers.log" >&2; cat "$DATA/peers.log" >&2; exit 1; }
}

# start_instance NAME PORT ROLES [env...]: the jar (INSTANCE_JAR, default ours) on the drill's database (DB)
# and Redis, with the peers' settings when they run, its own data directory DATA/NAME (service.log there);
# returns once its port answers, exits after DRILL_START_WAIT (180) seconds without an answer.
start_instance() {
  local name=$1 port=$2 roles=$3; shift 3
  mkdir -p "$DATA/$name"
  # shellcheck disable=SC2046
  env PORT="$port" PUSH_DATA_DIR="$DATA/$name" PUSH_LOG_FORMAT=text PUSH_ROLES="$roles" \
    DATABASE_URL="postgres://postgres@$PGHOST_DRILL:5432/$DB" REDIS_URL="$REDIS_URL_DRILL" PUSH_SECRET_KEY="$SECRET" \
    PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000 \
    $(cat "$PEERS/peers.env" 2>/dev/null) "$@" \
    "$JAVA" -Xmx768m -jar "${INSTANCE_JAR:-$ROOT/target/push-service.jar}" >>"$DATA/$name/service.log" 2>&1 &
  PIDS[$name]=$!
  PORTS[$name]=$port
  for _ in $(seq 1 "${DRILL_START_WAIT:-180}"); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" != 000 ] && return 0
    kill -0 "${PIDS[$name]}" 2>/dev/null || { echo "$name exited; see $DATA/$name/service.log" >&2; tail -30 "$DATA/$name/service.log" >&2; exit 1; }
    sleep 1
  done
  echo "$name did not start within ${DRILL_START_WAIT:-180} s" >&2; exit 1
}

# stop_instance NAME [signal]
stop_instance() {
  local pid=${PIDS[$1]:-}; [ -n "$pid" ] || return 0
  kill "-${2:-TERM}" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  unset "PIDS[$1]"
}

# drill_app NAME: KEY (a server key of the first-start app, from instance NAME's data directory),
# APP, BASE (that instance's URL); the peers' credentials set on the app.
drill_app() {
  KEY=$(bootstrap_key "$DATA/$1" server)
  PUBLIC_KEY=$(bootstrap_key "$DATA/$1" public)
  BASE="http://127.0.0.1:${PORTS[$1]}"
  APP=$($PG -Atc "select id from apps limit 1")
  api PATCH /v1/app/settings "$(cat "$PEERS/settings.json")" >/dev/null
}

api() { # api METHOD PATH [BODY]
  curl -s -X "$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" ${3:+-d "$3"} "$BASE$2"
}

# load_devices PLATFORM COUNT: devices registered over time (distinct created_at), in batches of
# 20,000 (bench/fanout.sh says why); ios tokens are hex, android ones fcm-drill-N.
load_devices() {
  local platform=$1 count=$2 lo hi token
  [ "$platform" = ios ] && token="encode(sha256(('ios-' || g)::bytea), 'hex')" || token="'fcm-drill-' || g"
  for ((lo = 1; lo <= count; lo += 20000)); do
    hi=$((lo + 19999 < count ? lo + 19999 : count))
    $PG -c "insert into devices (id, app_id, platform, token, token_hash, created_at)
            select gen_random_uuid(), '$APP', '$platform', $token, sha256(($token)::bytea),
                   now() - interval '1 day' + g * interval '1 millisecond'
            from generate_series($lo, $hi) g"
  done
  $PG -c "analyze devices"
}

# send BODY: the notification's id (exits when refused)
send() {
  local id; id=$(api POST /v1/notifications "$1" | grep -o '"notification_id":"[^"]*"' | cut -d'"' -f4)
  [ -n "$id" ] || { echo "the send was refused" >&2; exit 1; }
  echo "$id"
}
accepted() { $PG -Atc "select count(*) from notification_recipient_states where notification_id = '$1' and status = 'accepted'"; }
terminal() { $PG -Atc "select status in ('completed', 'failed', 'cancelled') from notifications where id = '$1'"; }
late() {
  $PG -Atc "select count(*) from notification_recipient_states r join notifications n on n.id = r.notification_id
            where r.notification_id = '$1' and r.status = 'accepted'
              and r.updated_at > coalesce(r.expires_at, coalesce(n.queued_at, n.created_at) + n.ttl * interval '1 second')"
}
by_status() {
  $PG -Atc "select '  ' || status || ' ' || coalesce(last_error, '') || ': ' || count(*) from notification_recipient_states
            where notification_id = '$1' group by status, last_error order by 1"
}
# in_flight ID: claimed rows still sending, plus recipients handed over and not recorded yet
in_flight() {
  $PG -Atc "select (select count(*) from notification_recipients where notification_id = '$1' and status = 'sending')
                 + (select coalesce(sum(handed - recorded), 0) from notification_handovers where notification_id = '$1')"
}
# wait_terminal ID LIMIT_SECONDS: 0 once the notification is completed/failed/cancelled, 1 at the limit
wait_terminal() {
  local limit=$(($(date +%s) + $2))
  while [ "$(terminal "$1")" != t ]; do
    [ "$(date +%s)" -gt "$limit" ] && return 1
    sleep 1
  done
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# phase NAME SECONDS: two wrk load generators for SECONDS in the background (WRK_PIDS), CONCURRENCY
# connections each: registrations (bench/registration.lua, the public key) and events
# (bench/events.lua, DATA/devices.txt); summaries and answers by status in DATA/NAME-*.out.
phase() {
  PUSH_KEY=$PUBLIC_KEY DRILL_SCRIPT="$ROOT/bench/registration.lua" \
    wrk -t1 -c"${CONCURRENCY:-4}" -d"${2}s" --timeout 10s -s "$ROOT/drills/statuses.lua" "$BASE" >"$DATA/$1-registrations.out" 2>&1 &
  local r=$!
  PUSH_KEY=$PUBLIC_KEY DEVICE_FILE="$DATA/devices.txt" DRILL_SCRIPT="$ROOT/bench/events.lua" \
    wrk -t1 -c"${CONCURRENCY:-4}" -d"${2}s" --timeout 10s -s "$ROOT/drills/statuses.lua" "$BASE" >"$DATA/$1-events.out" 2>&1 &
  local e=$!
  WRK_PIDS="$r $e"
}
phase_report() { # phase_report NAME
  local kind
  for kind in registrations events; do
    echo "  $1, $kind: $(grep -E '^(requests|events)/s' "$DATA/$1-$kind.out" | head -1); $(grep '^latency' "$DATA/$1-$kind.out");" \
         "$(grep '^errors' "$DATA/$1-$kind.out"); $(grep '^statuses' "$DATA/$1-$kind.out"); $(grep '^5xx without' "$DATA/$1-$kind.out")"
    grep '^first' "$DATA/$1-$kind.out" | sed 's/^/    /' || true
  done
}
load_5xx() { # all phases' 5xx answers
  awk -F'[:,] *' '/^statuses/ { for (i = 2; i < NF; i += 2) if ($i >= 500) s += $(i + 1) } END { print s + 0 }' "$DATA"/*-registrations.out "$DATA"/*-events.out
}
load_5xx_bare() { # all phases' 5xx answers without Retry-After
  awk '/^5xx without/ { s += $NF } END { print s + 0 }' "$DATA"/*-registrations.out "$DATA"/*-events.out
}
load_connection_errors() { # all phases' connect, read, write errors and timeouts
  awk -F'[ ,]+' '/^errors/ { s += $3 + $5 + $7 + $9 } END { print s + 0 }' "$DATA"/*-registrations.out "$DATA"/*-events.out
}

# wrk's output (bench/*.lua print these lines): p99_of OUT (ms), errors_of OUT (connect, read, write errors,
# timeouts and non-2xx answers together), count_of OUT (requests)
p99_of() { awk '/^latency/ { for (i = 1; i <= NF; i++) if ($i == "p99:") print $(i + 1) }' "$1"; }
errors_of() { awk -F'[ ,]+' '/^errors/ { print $3 + $5 + $7 + $9 + $11 }' "$1"; }
count_of() { awk '/^requests:/ { print $2 }' "$1"; }
