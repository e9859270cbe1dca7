#!/usr/bin/env bash
# Audience export benchmark: the service (heap capped with -Xmx, default 256m) on its embedded
# PostgreSQL with 1,000,000 devices (bench/estimate-data.sql), then POST /v1/exports
# {"type":"audience"} through the HTTP API. Prints progress while it runs, rows/s, the file's size,
# the largest heap use seen (Prometheus jvm_memory_used_bytes, heap, sampled every 0.5 s), and the
# download time. A capped heap far below the file's size shows the export never holds it in memory.
# Usage: bench/export.sh. BENCH_DATA=dir keeps the service's data there (reused on the next run),
# BENCH_HEAP=512m changes the cap.
source "$(dirname "$0")/lib.sh"
PORT=${PORT:-18192}
HEAP=${BENCH_HEAP:-256m}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
if [ -n "${BENCH_DATA:-}" ]; then
  DATA=$BENCH_DATA
  trap 'stop_service' EXIT
else
  DATA=$(mktemp -d /tmp/push-bench-export.XXXXXX)
  trap 'stop_service; rm -rf "$DATA"' EXIT
fi

command -v psql >/dev/null || { echo "psql is needed to load the data (apt-get install postgresql-client)" >&2; exit 1; }
build_jar
start_service "$PORT" "$DATA" JAVA_TOOL_OPTIONS="-Xmx$HEAP" \
  PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000
KEY=$(bootstrap_key "$DATA" server)
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps limit 1")
if [ "$($PG -Atc "select count(*) from devices")" -lt 1000000 ]; then
  echo "loading 200,000 users and 1,000,000 devices ..."
  $PG -v app="$APP" -f "$ROOT/bench/estimate-data.sql"
fi
echo "$($PG -Atc "select count(*) from devices where app_id = '$APP'") devices; heap cap $HEAP"

heap() {
  curl -s "http://127.0.0.1:$PORT/actuator/prometheus" \
    | awk '/^jvm_memory_used_bytes\{.*area="heap"/ { s += $NF } END { printf "%d", s }'
}

start=$(date +%s.%N)
ID=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{"type":"audience"}' \
  "http://127.0.0.1:$PORT/v1/exports" | grep -o '"export_id":"[^"]*"' | cut -d'"' -f4)
[ -n "$ID" ] || { echo "could not create the export" >&2; exit 1; }
max_heap=0; last_print=0
while :; do
  job=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v1/exports?limit=1")
  status=$(echo "$job" | grep -o '"status":"[^"]*"' | head -n 1 | cut -d'"' -f4)
  rows=$(echo "$job" | grep -o '"row_count":[0-9]*' | head -n 1 | cut -d: -f2)
  h=$(heap); [ "${h:-0}" -gt "$max_heap" ] && max_heap=$h
  now=$(date +%s)
  if [ "$now" -ne "$last_print" ]; then
    printf '  %-9s %9s rows  heap %4d MiB\n' "$status" "$rows" $(( h / 1048576 )); last_print=$now
  fi
  case "$status" in completed|failed) break ;; esac
  sleep 0.5
done
end=$(date +%s.%N)
[ "$status" = completed ] || { echo "export failed: $job" >&2; exit 1; }
size=$(echo "$job" | grep -o '"size_bytes":[0-9]*' | cut -d: -f2)
secs=$(echo "$end - $start" | bc -l)
printf 'exported %d rows in %.2f s: %.0f rows/s; CSV %d MiB; largest heap use seen %d MiB (cap %s)\n' \
  "$rows" "$secs" "$(echo "$rows / $secs" | bc -l)" $(( size / 1048576 )) $(( max_heap / 1048576 )) "$HEAP"
for enc in gzip identity; do
  t=$(curl -s -o /dev/null -w '%{time_total} %{size_download}' -H "Authorization: Bearer $KEY" \
    -H "Accept-Encoding: $enc" "http://127.0.0.1:$PORT/v1/exports/$ID/download")
  printf 'download (%s): %.2f s, %d MiB\n' "$enc" "${t% *}" $(( ${t#* } / 1048576 ))
done
