#!/usr/bin/env bash
# Events ingest benchmark: the service on its embedded PostgreSQL, a few hundred devices registered
# first, then wrk at concurrency 64 posting /v1/events (mixed types, ~70% naming a registered
# device, some with metadata). Every 202 is a committed event (group commit, see EventWriter).
# Prints events/s, p50/p99, the CPU each event cost the service, its PostgreSQL and wrk, and what
# the database holds afterwards.
# Usage: [WARMUP=30] bench/events.sh [seconds=30] [devices=300]
source "$(dirname "$0")/lib.sh"
DURATION=${1:-30}
WARMUP=${WARMUP:-30}
DEVICES=${2:-300}
PORT=${PORT:-18091}
DATA=$(mktemp -d /tmp/push-bench-events.XXXXXX)
trap 'stop_service; rm -rf "$DATA"' EXIT

need_wrk
build_jar
start_service "$PORT" "$DATA" PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000 \
  PUSH_RATE_LIMIT_APP_BURST=1000000 PUSH_RATE_LIMIT_ORG_BURST=1000000 \
  ${PUSH_DB_POOL_SIZE:+PUSH_DB_POOL_SIZE=$PUSH_DB_POOL_SIZE}
KEY=$(bootstrap_key "$DATA" public)

echo "registering $DEVICES devices ..."
seq 1 "$DEVICES" | xargs -P 8 -I{} curl -s -X POST "http://127.0.0.1:$PORT/v1/devices/register" \
  -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"platform":"android","push_token":"fcm-bench-{}-'"$RANDOM"'"}' -o - -w '\n' \
  | grep -o '"device_id":"[0-9a-f-]*"' | cut -d'"' -f4 >"$DATA/devices.txt"
echo "registered $(wc -l <"$DATA/devices.txt") devices"

PUSH_KEY=$KEY DEVICE_FILE="$DATA/devices.txt" wrk_measured "$DATA" "$PORT" "$ROOT/bench/events.lua" events/s event

if command -v psql >/dev/null && [ -f "$DATA/postgres.port" ]; then
  PGPORT=$(cat "$DATA/postgres.port")
  psql -X -q -t -A -h 127.0.0.1 -p "$PGPORT" -U postgres postgres \
    -c "select 'stored events: ' || count(*) || ', daily counters sum: ' || (select coalesce(sum(count), 0) from event_daily_counts) from events" \
    2>/dev/null || true
fi
