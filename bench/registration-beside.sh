#!/usr/bin/env bash
# Registrations beside another commit, back to back on one machine and one large table (issue 29: "registrations
# at least as fast as at e029d80, back to back on the same machine, with a 10,000,000-device table").
#   bench/registration-beside.sh [ref=e029d80] [devices=10000000] [seconds=30] [pairs=2]
# The reference commit's jar is built in a git worktree of its own (removed at the end). On the machine's
# PostgreSQL: a database made by the reference's migrations and loaded with DEVICES devices as it would make them
# (random ids; bench/load-devices.sql), then a copy of it migrated in place by this checkout's jar (an existing
# database upgraded: its devices keep their ids, new ones get this version's). Then PAIRS pairs, the order
# alternating: each side's instance started on its own database, wrk at concurrency 64 with
# bench/registration.lua (50% repeated tokens) for a WARMUP-second warm-up (default 60: at 20 s this checkout's
# JIT compiler was still busy, 174 µs of its CPU per registration), then SECONDS measured, the instance stopped.
# Prints per run requests/s, p99, errors and the CPU per registration of the service and of PostgreSQL (every
# backend of the machine's PostgreSQL), then the mean of each side and their ratio. Asserts nothing.
# Instances use the machine's Redis for rate limits, as several instances run in production; REDIS_URL_DRILL=
# (set and empty) runs both sides without it (in-process limits, as one instance runs).
# BASE_PORT (18430) and the next port; DRILL_KEEP=1 keeps the data directory (service logs, wrk outputs).
source "$(dirname "$0")/../drills/lib.sh"
REF=${1:-e029d80}
DEVICES=${2:-10000000}
DURATION=${3:-30}
PAIRS=${4:-2}
BASE_PORT=${BASE_PORT:-18430}
LOAD_CHUNK=${LOAD_CHUNK:-1000000}
REF_TREE=
beside_cleanup() {
  drill_cleanup
  [ -n "${DB_REF:-}" ] && dropdb -h "$PGHOST_DRILL" -U postgres --if-exists --force "$DB_REF" 2>/dev/null || true
  [ -n "$REF_TREE" ] && git -C "$ROOT" worktree remove --force "$REF_TREE" 2>/dev/null || true
}
trap beside_cleanup EXIT
need_wrk
drill_setup registration-beside
DB_MAIN=$DB
DB_REF="${DB}_ref"
OURS=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src || echo "+changes")
REF_SHORT=$(git -C "$ROOT" rev-parse --short "$REF")
echo "registrations: $REF_SHORT beside $OURS, $DEVICES devices, $PAIRS pairs of $DURATION s, rate limits $([ -n "$REDIS_URL_DRILL" ] && echo in Redis || echo in process); load average $(loadavg)"

REF_TREE=$(mktemp -d /tmp/push-ref-tree.XXXXXX)
rmdir "$REF_TREE"
git -C "$ROOT" worktree add -f --detach "$REF_TREE" "$REF" >/dev/null 2>&1
echo "building $REF_SHORT's jar ..."
(cd "$REF_TREE" && ./mvnw -q -B -ntp -DskipTests package)
REF_JAR=$REF_TREE/target/push-service.jar

# the reference's schema, app and keys (its first start), then the devices as it makes them
createdb -h "$PGHOST_DRILL" -U postgres "$DB_REF"
DB=$DB_REF INSTANCE_JAR=$REF_JAR start_instance ref "$BASE_PORT" api,worker,scheduler
PUBLIC_KEY=$(bootstrap_key "$DATA/ref" public)
stop_instance ref
PG_REF="psql -X -q -v ON_ERROR_STOP=1 -h $PGHOST_DRILL -U postgres -d $DB_REF"
APP=$($PG_REF -Atc "select id from apps limit 1")
start=$(date +%s)
for ((lo = 1; lo <= DEVICES; lo += LOAD_CHUNK)); do
  hi=$((lo + LOAD_CHUNK - 1 < DEVICES ? lo + LOAD_CHUNK - 1 : DEVICES))
  final=false; [ "$hi" = "$DEVICES" ] && final=true
  $PG_REF -v app="$APP" -v lo="$lo" -v hi="$hi" -v device_id='gen_random_uuid()' -v final=$final -f "$ROOT/bench/load-devices.sql" >/dev/null
  echo "  loaded devices $lo..$hi ($(($(date +%s) - start)) s so far)"
done
# ours: a copy, migrated in place at its first start
$PG -c "checkpoint" >/dev/null
dropdb -h "$PGHOST_DRILL" -U postgres "$DB_MAIN"
psql -X -q -h "$PGHOST_DRILL" -U postgres -d postgres -c "create database \"$DB_MAIN\" template \"$DB_REF\" strategy file_copy"
echo "copied; migrating the copy with $OURS ..."
start_instance ours $((BASE_PORT + 1)) api,worker,scheduler
stop_instance ours
echo "devices: $($PG -Atc "select count(*) from devices") in each database; devices table $($PG -Atc "select pg_size_pretty(pg_total_relation_size('devices'))") with its indexes"

PGPID=$(head -n 1 "$($PG -Atc 'show data_directory')/postmaster.pid" 2>/dev/null || echo 0)
RUNS=$DATA/runs.txt
: >"$RUNS"
# run SIDE: its instance on its database, warm-up, measured wrk, CPU; one line into RUNS
run() {
  local side=$1 port=$BASE_PORT db=$DB_REF jar=$REF_JAR
  [ "$side" = ours ] && port=$((BASE_PORT + 1)) db=$DB_MAIN jar=$ROOT/target/push-service.jar
  DB=$db INSTANCE_JAR=$jar start_instance "$side" "$port" api,worker,scheduler
  local base="http://127.0.0.1:$port" out="$DATA/$side-$(date +%H%M%S).out"
  PUSH_KEY=$PUBLIC_KEY REPEAT_PERCENT=50 wrk -t2 -c64 -d"${WARMUP:-60}s" -s "$ROOT/bench/registration.lua" "$base" >/dev/null
  local s0 p0 s1 p1
  s0=$(cpu_ticks "${PIDS[$side]}"); p0=$(cpu_ticks "$PGPID")
  PUSH_KEY=$PUBLIC_KEY REPEAT_PERCENT=50 wrk -t2 -c64 -d"${DURATION}s" --timeout 10s -s "$ROOT/bench/registration.lua" "$base" >"$out"
  s1=$(cpu_ticks "${PIDS[$side]}"); p1=$(cpu_ticks "$PGPID")
  stop_instance "$side"
  local rps
  rps=$(awk '/^requests\/s/ { print $2 }' "$out")
  echo "$side $rps" >>"$RUNS"
  local label=$REF_SHORT; [ "$side" = ours ] && label=$OURS
  printf '  %-16s %8s registrations/s, p99 %s ms, %s errors; %s (load average %s)\n' "$label" "$rps" "$(p99_of "$out")" \
    "$(errors_of "$out")" "$(cpu_report registration "$(count_of "$out")" "$s0" "$s1" "$p0" "$p1")" "$(loadavg)"
}
for ((i = 1; i <= PAIRS; i++)); do
  echo "pair $i"
  if ((i % 2)); then run ref; run ours; else run ours; run ref; fi
done
awk -v ref="$REF_SHORT" -v ours="$OURS" '{ s[$1] += $2; n[$1]++ } END {
  r = s["ref"] / n["ref"]; o = s["ours"] / n["ours"];
  printf "mean: %s %.0f/s, %s %.0f/s: %+.1f%%\n", ref, r, ours, o, (o / r - 1) * 100 }' "$RUNS"
