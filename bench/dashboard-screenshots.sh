#!/usr/bin/env bash
# Screenshots of the dashboard for docs/dashboard/ (run by hand, not in CI): the service (jar) on its
# embedded PostgreSQL with the three local protocol peers (bench/FanoutPeers), an app with a few dozen
# devices on three platforms (some unsubscribed, one invalid) and a handful of notifications delivered
# to the peers, an owner made by `admin member add`; then DashboardPages signs in with headless
# Chromium (Debian's chromium and chromium-driver) and saves every page it finds by following links,
# at a laptop's and a phone's width, as docs/dashboard/NAME-laptop.png and NAME-phone.png.
#   bench/dashboard-screenshots.sh [output directory=docs/dashboard]
source "$(dirname "$0")/lib.sh"
OUT=$(cd "$ROOT" && mkdir -p "${1:-docs/dashboard}" && cd "${1:-docs/dashboard}" && pwd)
PORT=${PORT:-18297}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || { echo "needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)" >&2; exit 1; }
DATA=$(mktemp -d /tmp/push-dashboard-screenshots.XXXXXX)
PEERS=$DATA/peers
cleanup() {
  stop_service
  [ -n "${PEERS_PID:-}" ] && kill "$PEERS_PID" 2>/dev/null && wait "$PEERS_PID" 2>/dev/null || true
  stop_postgres "$DATA"
  rm -rf "$DATA"
}
trap cleanup EXIT

build_jar
(cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
  && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
JAVA=$(find_java)
CP="$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")"
"$JAVA" --enable-native-access=ALL-UNNAMED -Xmx256m -cp "$CP" dev.pushservice.bench.FanoutPeers "$PEERS" 8 >"$DATA/peers.log" 2>&1 &
PEERS_PID=$!
for _ in $(seq 1 120); do [ -s "$PEERS/peers.env" ] && [ -s "$PEERS/counts.txt" ] && break; sleep 1; done
[ -s "$PEERS/peers.env" ] || { echo "peers did not start; see $DATA/peers.log" >&2; exit 1; }
# shellcheck disable=SC2046
start_service "$PORT" "$DATA" $(cat "$PEERS/peers.env")
SERVER=$(bootstrap_key "$DATA" server) # the first start's organisation, app and keys are made by then
PUBLIC=$(bootstrap_key "$DATA" public)
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps order by created_at limit 1")
ORG=$($PG -Atc "select org_id from apps where id = '$APP'")
$PG -c "update organisations set name = 'Northwind Outfitters' where id = '$ORG'; update apps set name = 'Northwind Shop', timezone = 'Europe/Berlin' where id = '$APP'"
api() { # api KEY METHOD PATH [BODY]
  curl -s -X "$2" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" ${4:+-d "$4"} "http://127.0.0.1:$PORT$3"
}
api "$SERVER" PATCH /v1/app/settings "$(cat "$PEERS/settings.json")" >/dev/null

echo "registering devices ..."
LOCALES=(en-GB de-DE fr-FR en-US es-ES)
for i in $(seq 1 24); do
  api "$PUBLIC" POST /v1/devices/register "{\"platform\":\"ios\",\"push_token\":\"$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')\",
    \"external_user_id\":\"customer-$i\",\"app_version\":\"4.$((i % 3)).0\",\"device_model\":\"iPhone15,$((i % 4))\",\"os_version\":\"18.$((i % 5))\",
    \"locale\":\"${LOCALES[$((i % 5))]}\",\"timezone\":\"Europe/Berlin\"}" >/dev/null
done
for i in $(seq 1 15); do
  api "$PUBLIC" POST /v1/devices/register "{\"platform\":\"android\",\"push_token\":\"fcm-$(cat /proc/sys/kernel/random/uuid)\",
    \"external_user_id\":\"customer-$((i + 30))\",\"app_version\":\"4.1.$i\",\"locale\":\"${LOCALES[$((i % 5))]}\",\"timezone\":\"Europe/Paris\"}" >/dev/null
done
while read -r sub; do
  api "$PUBLIC" POST /v1/devices/register "$(printf '{"platform":"web","push_token":%s,"locale":"en-GB"}' "$(printf '%s' "$sub" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')")" >/dev/null
done <"$PEERS/web-subscriptions.txt"
# three devices unsubscribed (disabled), one refused by its provider (invalid)
$PG -c "update devices set enabled = false where id in (select id from devices where app_id = '$APP' and platform = 'android' order by created_at limit 3)"
$PG -c "update devices set invalidated_at = now(), invalidation_reason = 'unregistered' where id = (select id from devices where app_id = '$APP' and platform = 'ios' order by created_at limit 1)"

echo "sending notifications to the peers ..."
for n in "Welcome series: day 1" "Spring sale starts now" "Your order has shipped" "Price drop on your wishlist" "Weekly digest" "Back in stock: trail runners"; do
  api "$SERVER" POST /v1/notifications "{\"name\":\"$n\",\"title\":\"$n\",\"body\":\"Open the app to see more.\",\"target\":{\"type\":\"all\"}}" >/dev/null
  sleep 1
done
for _ in $(seq 1 60); do
  [ "$($PG -Atc "select count(*) from notifications where app_id = '$APP' and status not in ('completed', 'failed', 'cancelled')")" = 0 ] && break; sleep 1
done
$PG -Atc "select status, count(*) from notifications where app_id = '$APP' group by 1"

LINK=$(DATABASE_URL="postgres://postgres@127.0.0.1:$(cat "$DATA/postgres.port")/postgres" PUSH_DATA_DIR="$DATA/cli" \
  PUSH_PUBLIC_URL="http://127.0.0.1:$PORT" PUSH_LOG_FORMAT=text LOGGING_LEVEL_ROOT=warn \
  "$JAVA" -jar "$ROOT/target/push-service.jar" admin member add --org "$ORG" --email "maria.lopez@northwind.example" --role owner \
  | grep -o 'http[^ ]*/dashboard/join?token=[A-Za-z0-9_-]*')
[ -n "$LINK" ] || { echo "admin member add printed no link" >&2; exit 1; }
SE_MANAGER_PATH=/nonexistent/selenium-manager-must-not-run \
  "$JAVA" --enable-native-access=ALL-UNNAMED -Xmx512m -cp "$CP" \
  dev.pushservice.bench.DashboardPages screenshots "http://127.0.0.1:$PORT" "$LINK" "screenshot password 1" "$APP" "$OUT"
