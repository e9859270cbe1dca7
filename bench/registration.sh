#!/usr/bin/env bash
# Registration benchmark: the service on its embedded PostgreSQL, wrk at concurrency 64 posting
# /v1/devices/register with 50% fresh and 50% repeated tokens. Prints requests/s, p50/p99, and the
# CPU each registration cost the service, its PostgreSQL and wrk (from /proc).
# Usage: [WARMUP=30] [PUSH_DB_POOL_SIZE=n] bench/registration.sh [seconds=30] [repeat-percent=50]
source "$(dirname "$0")/lib.sh"
DURATION=${1:-30}
WARMUP=${WARMUP:-30}
REPEAT=${2:-50}
PORT=${PORT:-18090}
DATA=$(mktemp -d /tmp/push-bench-reg.XXXXXX)
trap 'stop_service; rm -rf "$DATA"' EXIT

need_wrk
build_jar
start_service "$PORT" "$DATA" PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000 \
  ${PUSH_DB_POOL_SIZE:+PUSH_DB_POOL_SIZE=$PUSH_DB_POOL_SIZE}
KEY=$(bootstrap_key "$DATA" public)

echo "repeated tokens: ${REPEAT}%"
PUSH_KEY=$KEY REPEAT_PERCENT=$REPEAT wrk_measured "$DATA" "$PORT" "$ROOT/bench/registration.lua" requests/s registration
