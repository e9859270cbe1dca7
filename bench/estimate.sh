#!/usr/bin/env bash
# Segment estimate benchmark: the service on its embedded PostgreSQL with 1,000,000 devices across
# 200,000 users (tags, events), loaded set-based (bench/estimate-data.sql), then
# POST /v1/segments/estimate through the HTTP API for five filters. Prints each filter's count and
# its times (first run, then the best and median of RUNS more). EXPLAIN=1 also prints query plans.
# Usage: bench/estimate.sh [runs=5]. BENCH_DATA=dir keeps the service's data there (and reuses
# it on the next run instead of loading again).
source "$(dirname "$0")/lib.sh"
RUNS=${1:-5}
PORT=${PORT:-18191}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
if [ -n "${BENCH_DATA:-}" ]; then
  DATA=$BENCH_DATA
  trap 'stop_service' EXIT
else
  DATA=$(mktemp -d /tmp/push-bench-est.XXXXXX)
  trap 'stop_service; rm -rf "$DATA"' EXIT
fi

command -v psql >/dev/null || { echo "psql is needed to load the data (apt-get install postgresql-client)" >&2; exit 1; }
build_jar
start_service "$PORT" "$DATA" PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000
# the first-start keys are written just after the port opens
for _ in $(seq 1 30); do [ -s "$DATA/bootstrap-keys.txt" ] && break; sleep 1; done
KEY=$(bootstrap_key "$DATA" server)
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps limit 1")

if [ "$($PG -Atc "select count(*) from devices")" -lt 1000000 ]; then
  echo "loading 200,000 users, 1,000,000 devices and their events ..."
  start=$(date +%s)
  $PG -v app="$APP" -f "$ROOT/bench/estimate-data.sql"
  echo "loaded in $(( $(date +%s) - start )) s"
fi
echo "$($PG -Atc "select count(*) from devices") devices, \
$($PG -Atc "select count(*) from users") users, $($PG -Atc "select count(*) from device_event_last") event rows"

declare -a NAMES=(
  "tag equality (tag.plan eq gold)"
  "platform + locale (ios and locale de)"
  "event.opened within_days 7"
  "nested any/all of five conditions"
  "custom_event.x not_exists"
)
declare -a FILTERS=(
  '{"field":"tag.plan","operator":"eq","value":"gold"}'
  '{"all":[{"field":"platform","operator":"eq","value":"ios"},{"field":"locale","operator":"eq","value":"de"}]}'
  '{"field":"event.opened","operator":"within_days","value":7}'
  '{"any":[{"all":[{"field":"tag.plan","operator":"eq","value":"platinum"},{"field":"platform","operator":"eq","value":"android"}]},{"all":[{"field":"locale","operator":"in","value":["fr","es"]},{"field":"app_version","operator":"gte","value":"3.2"},{"field":"event.clicked","operator":"within_days","value":30}]}]}'
  '{"field":"custom_event.x","operator":"not_exists"}'
)

estimate() { # estimate FILTER -> "count seconds"
  curl -s -o "$DATA/out.json" -w '%{time_total}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d "{\"filter\":$1}" "http://127.0.0.1:$PORT/v1/segments/estimate" >"$DATA/time.txt"
  echo "$(grep -o '[0-9]*' "$DATA/out.json" | head -n 1) $(cat "$DATA/time.txt")"
}

echo
printf '%-42s %12s %10s %10s %10s\n' "filter" "recipients" "first s" "best s" "median s"
for i in "${!FILTERS[@]}"; do
  read -r count first < <(estimate "${FILTERS[$i]}")
  times=()
  for _ in $(seq 1 "$RUNS"); do read -r _ t < <(estimate "${FILTERS[$i]}"); times+=("$t"); done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  best=$(echo "$sorted" | head -n 1)
  median=$(echo "$sorted" | sed -n "$(( (RUNS + 1) / 2 ))p")
  printf '%-42s %12s %10.3f %10.3f %10.3f\n' "${NAMES[$i]}" "$count" "$first" "$best" "$median"
done

if [ "${EXPLAIN:-0}" = 1 ]; then
  echo
  echo "plans (the SQL FilterCompiler writes for the third and fourth filters, values inlined):"
  $PG -c "set work_mem = '64MB'" -c "explain (analyze, buffers, costs off) select count(*) from devices d
          left join device_event_last sf_e1 on sf_e1.app_id = d.app_id and sf_e1.event_key = 'opened' and sf_e1.device_id = d.id
            and sf_e1.last_at >= date_trunc('day', now()) - interval '7 days'
          where d.app_id = '$APP' and d.enabled and d.invalidated_at is null and (d.user_id is not null and sf_e1.device_id is not null)"
  $PG -c "set work_mem = '64MB'" -c "explain (analyze, buffers, costs off) select count(*) from devices d
          left join device_event_last sf_e1 on sf_e1.app_id = d.app_id and sf_e1.event_key = 'clicked' and sf_e1.device_id = d.id
            and sf_e1.last_at >= date_trunc('day', now()) - interval '30 days'
          where d.app_id = '$APP' and d.enabled and d.invalidated_at is null and (d.user_id is not null and coalesce((
            (sf_e1.device_id is not null and d.app_version_key >= segment_version_key('3.2')
             and case when d.locale is not null then d.locale in ('fr', 'es')
                 else d.user_id in (select sf_u1.id from users sf_u1 where sf_u1.app_id = '$APP' and sf_u1.locale in ('fr', 'es')) end)
            or (d.platform = 'android'
                and d.user_id in (select sf_u2.id from users sf_u2 where sf_u2.app_id = '$APP' and sf_u2.tags @> '{\"plan\":\"platinum\"}'))), false))"
fi
