#!/usr/bin/env bash
# Drill: the machine's Redis stopped under steady registrations and events. One instance (all roles)
# on the machine's PostgreSQL (a fresh database, dropped at the end) and Redis (redis://127.0.0.1:6379,
# the rate limits' shared buckets). Two wrk load generators (registrations, bench/registration.lua;
# events, bench/events.lua; CONCURRENCY connections each) run through three phases: BEFORE seconds with
# Redis up, DOWN seconds after `redis-cli shutdown nosave`, AFTER seconds after Redis is started again
# (as .ci/run starts it). Prints the answers by HTTP status per phase and generator, /health during the
# outage and the service's warnings about Redis, and exits non-zero on any 5xx or connection error.
# Rate limits fail open while Redis is unreachable (docs/api-decisions.md, "Rate limits").
#   drills/redis-outage.sh [down_seconds=60] [before_seconds=20] [after_seconds=30]
# CONCURRENCY (4). Redis is started again whatever happens (trap). DRILL_KEEP=1 keeps the data directory.
source "$(dirname "$0")/lib.sh"
DOWN=${1:-60}
BEFORE=${2:-20}
AFTER=${3:-30}
CONCURRENCY=${CONCURRENCY:-4}
BASE_PORT=${BASE_PORT:-18320}
command -v redis-cli >/dev/null && command -v redis-server >/dev/null || { echo "redis-cli and redis-server are needed" >&2; exit 1; }
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { echo "the machine's Redis is not running at 127.0.0.1:6379" >&2; exit 1; }
need_wrk
redis_start() {
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0; sleep 1; done
  echo "Redis did not come back" >&2
}
cleanup() {
  [ -n "${WRK_PIDS:-}" ] && kill $WRK_PIDS 2>/dev/null || true
  redis_start
  drill_cleanup
}
trap cleanup EXIT
drill_setup redis-outage
start_peers
echo "database $DB; load average $(loadavg)"
start_instance svc "$BASE_PORT" api,worker,scheduler
drill_app svc
load_devices ios 1000
$PG -Atc "select id from devices where app_id = '$APP'" >"$DATA/devices.txt"


echo "phase 1: Redis up, $BEFORE s"
phase before "$BEFORE"; wait $WRK_PIDS; WRK_PIDS=
phase_report before
echo "phase 2: Redis stopped (shutdown nosave), $DOWN s"
redis-cli -h 127.0.0.1 -p 6379 shutdown nosave >/dev/null 2>&1 || true
for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || break; sleep 0.1; done
phase down "$DOWN"
sleep 5
echo "  /health 5 s into the outage: HTTP $(curl -s -o "$DATA/health.json" -w '%{http_code}' "$BASE/health") $(grep -o '"status":"[a-z_]*"' "$DATA/health.json" | head -1), redis $(grep -o '"redis":{[^}]*}' "$DATA/health.json")"
wait $WRK_PIDS; WRK_PIDS=
phase_report down
echo "phase 3: Redis started again, $AFTER s"
redis_start
phase after "$AFTER"
sleep 5
echo "  /health 5 s after: HTTP $(curl -s -o "$DATA/health.json" -w '%{http_code}' "$BASE/health") $(grep -o '"status":"[a-z_]*"' "$DATA/health.json" | head -1), redis $(grep -o '"redis":{[^}]*}' "$DATA/health.json")"
wait $WRK_PIDS; WRK_PIDS=
phase_report after
echo "service log: $(grep -c 'Redis' "$DATA/svc/service.log" || true) lines naming Redis, $(grep -c ' ERROR ' "$DATA/svc/service.log" || true) errors"
grep -E 'Redis|ERROR' "$DATA/svc/service.log" | cut -c14-220 | sed 's/\[[^]]*\] //' | sort | uniq -c | sort -rn | head -5 | sed 's/^/    /' || true
FIVE=$(load_5xx); CONN=$(load_connection_errors)
echo "5xx: $FIVE; connection errors (connect, read, write, timeout): $CONN; load average $(loadavg)"
[ "$FIVE" -eq 0 ] && [ "$CONN" -eq 0 ] || exit 1
