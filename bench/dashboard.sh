#!/usr/bin/env bash
# Dashboard page speed: the service (jar) on its embedded PostgreSQL with one app holding DEVICES devices
# (default 1,000,000: 60% iOS, 35% Android, 5% Web; 4% unsubscribed, 3% invalid) and NOTIFICATIONS
# notifications (default 10,000, completed, over the last five weeks; the latest 20 with 5,000 recipient
# rows each, the rest with their summary only, as terminal notifications keep it). A member signs in
# (setup link from `admin member add`, as an operator makes one), the program DashboardPages discovers
# the app's pages by following links from the overview and its navigation (pages not built yet answer
# 404 and are left out; new ones are measured without a change here) and times REQUESTS sequential
# GETs of each after 5 unmeasured: p50, p95, max. Asserts nothing.
#   bench/dashboard.sh [devices=1000000] [notifications=10000] [requests=50]
# BENCH_KEEP=1 keeps the data directory; BENCH_DATA=dir reuses (or first fills) that directory, so a
# second run skips the loading. BENCH_SERVICE_ENV="NAME=value ..." adds settings to the service's
# environment (PUSH_DASHBOARD_DEVICE_COUNTS_REFRESH=0 counts the devices at every overview view, as
# before the counts were kept). Do not build the jar (./mvnw package/verify) while it runs: the
# service runs from target/push-service.jar.
source "$(dirname "$0")/lib.sh"
DEVICES=${1:-1000000}
NOTIFICATIONS=${2:-10000}
REQUESTS=${3:-50}
PORT=${PORT:-18295}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
DATA=${BENCH_DATA:-$(mktemp -d /tmp/push-bench-dashboard.XXXXXX)}
cleanup() {
  stop_service
  stop_postgres "$DATA"
  [ -n "${BENCH_KEEP:-}${BENCH_DATA:-}" ] && echo "data kept in $DATA" || rm -rf "$DATA"
}
trap cleanup EXIT

build_jar
(cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
  && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
JAVA=$(find_java)
# shellcheck disable=SC2086
start_service "$PORT" "$DATA" ${BENCH_SERVICE_ENV:-}
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
KEY=$(bootstrap_key "$DATA" server) # the first start's organisation, app and keys are made by then
APP=$($PG -Atc "select id from apps order by created_at limit 1")
ORG=$($PG -Atc "select org_id from apps where id = '$APP'")

if [ "$($PG -Atc "select count(*) from devices where app_id = '$APP'")" -lt "$DEVICES" ]; then
  # one real notification through the API: the model of the loaded ones (content and audience as the API stores them)
  MODEL=$(curl -s -X POST -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" \
    -d '{"name":"model","title":"Spring sale","body":"20% off everything until Sunday","target":{"type":"all"}}' \
    "http://127.0.0.1:$PORT/v1/notifications" | sed -n 's/.*"notification_id":"\([^"]*\)".*/\1/p')
  [ -n "$MODEL" ] || { echo "could not create the model notification" >&2; exit 1; }
  for _ in $(seq 1 60); do [ "$($PG -Atc "select status from notifications where id = '$MODEL'")" = completed ] && break; sleep 1; done

  echo "loading $DEVICES devices ..."
  # in transactions of 20,000 rows, as bench/fanout.sh does (each insert also updates the organisation's
  # device counter row through a deferred trigger: one huge transaction costs PostgreSQL about N^2)
  LOAD_BATCH=20000
  t0=$(date +%s)
  {
    for ((lo = 1; lo <= DEVICES; lo += LOAD_BATCH)); do
      hi=$((lo + LOAD_BATCH - 1 < DEVICES ? lo + LOAD_BATCH - 1 : DEVICES))
      cat <<SQL
insert into devices (id, app_id, platform, token, token_hash, enabled, invalidated_at, invalidation_reason, locale, timezone,
                     app_version, created_at, updated_at, last_seen_at)
select gen_random_uuid(), '$APP', p, 'bench-' || p || '-' || g, sha256(('bench-' || p || '-' || g)::bytea),
       g % 25 <> 0, case when g % 33 = 0 then now() - (g % 30) * interval '1 day' end,
       case when g % 33 = 0 then 'unregistered' end,
       (array['en-GB','en-US','de-DE','fr-FR','es-ES'])[1 + g % 5], (array['Europe/London','Europe/Berlin','America/New_York'])[1 + g % 3],
       (array['3.1.0','3.2.0','3.2.1','4.0.0'])[1 + g % 4],
       now() - interval '400 days' + g * interval '30 seconds', now(), now() - (g % 90) * interval '1 day'
from (select g, case when g % 20 < 12 then 'ios' when g % 20 < 19 then 'android' else 'web' end as p
      from generate_series($lo, $hi) g) s;
SQL
    done
    echo "analyze devices;"
  } | $PG
  echo "  devices loaded in $(( $(date +%s) - t0 )) s"

  echo "loading $NOTIFICATIONS notifications ..."
  $PG <<SQL
create temp table n_load as
select n.*, g from notifications n, generate_series(1, $NOTIFICATIONS) g where n.id = '$MODEL';
update n_load set id = gen_random_uuid(), idempotency_key = 'bench-' || g,
  name = (array['Spring sale', 'Weekly digest', 'Order shipped', 'Price drop', 'New episode', 'Reminder'])[1 + g % 6] || ' #' || g,
  priority = case when g % 10 = 0 then 'transactional' else 'normal' end,
  created_at = now() - g * interval '5 minutes', audience_at = now() - g * interval '5 minutes',
  queued_at = now() - g * interval '5 minutes', processing_at = now() - g * interval '5 minutes' + interval '1 second',
  finished_at = now() - g * interval '5 minutes' + interval '40 seconds', updated_at = now() - g * interval '5 minutes' + interval '40 seconds',
  recipient_count = 5000 + g % 997,
  summary = jsonb_build_array(
    jsonb_build_object('platform', 'ios', 'status', 'accepted', 'count', 2900 + g % 500),
    jsonb_build_object('platform', 'ios', 'status', 'invalid_token', 'count', 40 + g % 20),
    jsonb_build_object('platform', 'android', 'status', 'accepted', 'count', 1700 + g % 300),
    jsonb_build_object('platform', 'android', 'status', 'failed', 'count', 12 + g % 7),
    jsonb_build_object('platform', 'web', 'status', 'accepted', 'count', 250 + g % 50));
update n_load set recipient_count = (select sum((e ->> 'count')::int) from jsonb_array_elements(summary) e);
alter table n_load drop column g;
insert into notifications select * from n_load;
-- recipient rows for the latest 20 (what report pages read), 5,000 each
insert into notification_recipients (notification_id, device_id, app_id, platform, status, attempts, next_attempt_at, updated_at)
select n.id, d.id, n.app_id, d.platform,
       case when d.invalidated_at is not null then 'invalid_token' when hashtext(d.id::text) % 200 = 0 then 'failed' else 'accepted' end,
       1, n.created_at, n.finished_at
from (select id, app_id, created_at, finished_at, row_number() over (order by created_at desc) as k
      from notifications where app_id = '$APP' and idempotency_key like 'bench-%' order by created_at desc limit 20) n
join (select id, platform, invalidated_at, row_number() over (order by created_at) as r
      from devices where app_id = '$APP') d on d.r between (n.k - 1) * 5000 + 1 and n.k * 5000;
analyze notifications; analyze notification_recipients;
SQL
fi
echo "app $APP: $($PG -Atc "select count(*) from devices where app_id = '$APP'") devices, $($PG -Atc "select count(*) from notifications where app_id = '$APP'") notifications, $($PG -Atc "select count(*) from notification_recipients where app_id = '$APP'") recipient rows"

# a member, as an operator makes one: the admin CLI's one-time setup link
EMAIL="bench-$(date +%s)@example.com"
LINK=$(DATABASE_URL="postgres://postgres@127.0.0.1:$(cat "$DATA/postgres.port")/postgres" PUSH_DATA_DIR="$DATA/cli" \
  PUSH_PUBLIC_URL="http://127.0.0.1:$PORT" PUSH_LOG_FORMAT=text LOGGING_LEVEL_ROOT=warn \
  "$JAVA" -jar "$ROOT/target/push-service.jar" admin member add --org "$ORG" --email "$EMAIL" --role owner \
  | grep -o 'http[^ ]*/dashboard/join?token=[A-Za-z0-9_-]*')
[ -n "$LINK" ] || { echo "admin member add printed no link" >&2; exit 1; }

echo "load average: $(cut -d ' ' -f 1-3 /proc/loadavg)"
"$JAVA" --enable-native-access=ALL-UNNAMED -Xmx512m \
  -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
  dev.pushservice.bench.DashboardPages speed "http://127.0.0.1:$PORT" "$LINK" "bench password 1234" "$APP" "$REQUESTS"
echo "load average: $(cut -d ' ' -f 1-3 /proc/loadavg)"
