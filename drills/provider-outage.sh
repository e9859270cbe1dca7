#!/usr/bin/env bash
# Drill: a provider outage in the middle of a send. The service (jar) on its embedded PostgreSQL, the
# local peers in their own JVM (bench/FanoutPeers with the provider's peer behind a relay the drill
# takes down); one notification (ttl 1 day) to all DEVICES devices of the platform; at AT_PERCENT
# accepted the peer goes down (connections cut, new ones refused: as a peer killed with -9) for
# DOWN_SECONDS, then comes back. Prints what every recipient ended as, what was lost (not accepted),
# sent twice (pushes the peer took beyond one per device) and late (accepted after its TTL), and exits
# non-zero when anything was lost.
#   drills/provider-outage.sh [devices=100000] [down_seconds=180] [at_percent=30] [platform=ios]
#   drills/provider-outage.sh fcm [devices] [down_seconds] [at_percent]     (the same as platform android)
# PLATFORM: ios (APNs, the default) or android (FCM: its send endpoint behind the relay; the OAuth2
# token endpoint stays up); also as the 4th argument, or as a first argument apns / fcm / android.
# DRILL_KEEP=1 keeps the data directory (service.log, peers.log).
source "$(dirname "$0")/../bench/lib.sh"
case "${1:-}" in
  [Ff][Cc][Mm] | android) PLATFORM=android; shift ;;
  [Aa][Pp][Nn][Ss] | ios) PLATFORM=ios; shift ;;
esac
DEVICES=${1:-100000}
DOWN=${2:-180}
AT=${3:-30}
PLATFORM=${4:-${PLATFORM:-ios}}
case "$PLATFORM" in
  ios | apns | APNs | APNS) PLATFORM=ios; PEER=APNs; FILE=apns; RELAY=relay
    TOKEN="encode(sha256(('ios-' || g)::bytea), 'hex')" ;;
  android | fcm | FCM) PLATFORM=android; PEER=FCM; FILE=fcm; RELAY=fcm-relay
    TOKEN="'fcm-drill-' || g" ;;
  *) echo "platform: ios or android, not $PLATFORM" >&2; exit 2 ;;
esac
PORT=${PORT:-18294}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
DATA=$(mktemp -d /tmp/push-drill-outage.XXXXXX)
PEERS=$DATA/peers
cleanup() {
  stop_service
  [ -n "${PEERS_PID:-}" ] && kill "$PEERS_PID" 2>/dev/null && wait "$PEERS_PID" 2>/dev/null || true
  stop_postgres "$DATA"
  [ -n "${DRILL_KEEP:-}" ] && echo "data kept in $DATA" || rm -rf "$DATA"
}
trap cleanup EXIT

build_jar
(cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
  && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
JAVA=$(find_java)
"$JAVA" --enable-native-access=ALL-UNNAMED -Xms256m -Xmx1g \
  -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
  dev.pushservice.bench.FanoutPeers "$PEERS" 0 "$RELAY" >"$DATA/peers.log" 2>&1 &
PEERS_PID=$!
for _ in $(seq 1 120); do [ -s "$PEERS/peers.env" ] && [ -s "$PEERS/$FILE-tokens.txt" ] && break; sleep 1; done
[ -s "$PEERS/peers.env" ] || { echo "peers did not start; see $DATA/peers.log" >&2; cat "$DATA/peers.log" >&2; exit 1; }

# shellcheck disable=SC2046
start_service "$PORT" "$DATA" PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000 \
  $(cat "$PEERS/peers.env")
KEY=$(bootstrap_key "$DATA" server)
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps limit 1")
api() { # api METHOD PATH [BODY]
  curl -s -X "$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" ${3:+-d "$3"} "http://127.0.0.1:$PORT$2"
}
api PATCH /v1/app/settings "$(cat "$PEERS/settings.json")" >/dev/null

echo "loading $DEVICES $PLATFORM devices ($PEER) ..."
for ((lo = 1; lo <= DEVICES; lo += 20000)); do
  hi=$((lo + 19999 < DEVICES ? lo + 19999 : DEVICES))
  $PG -c "insert into devices (id, app_id, platform, token, token_hash, created_at)
          select gen_random_uuid(), '$APP', '$PLATFORM', $TOKEN, sha256(($TOKEN)::bytea),
                 now() - interval '1 day' + g * interval '1 millisecond'
          from generate_series($lo, $hi) g"
done
$PG -c "analyze devices"

ID=$(api POST /v1/notifications '{"title":"Drill","body":"provider outage","ttl":86400,"target":{"type":"all"}}' \
  | grep -o '"notification_id":"[^"]*"' | cut -d'"' -f4)
[ -n "$ID" ] || { echo "the send was refused" >&2; exit 1; }
START=$(date +%s)
accepted() { $PG -Atc "select count(*) from notification_recipient_states where notification_id = '$ID' and status = 'accepted'"; }
terminal() { $PG -Atc "select status in ('completed', 'failed', 'cancelled') from notifications where id = '$ID'"; }

THRESHOLD=$((DEVICES * AT / 100))
while [ "$(accepted)" -lt "$THRESHOLD" ]; do
  [ "$(terminal)" = t ] && { echo "finished before $AT% were accepted: use more devices" >&2; exit 1; }
  sleep 0.2
done
touch "$PEERS/$FILE-down"
STOPPED=$(date +%s)
for _ in $(seq 1 50); do grep -q "$PEER relay down" "$DATA/peers.log" && break; sleep 0.1; done
sleep 0.3 # the peer's counts are written every 100 ms
read -r _ PUSHES_AT_STOP < "$PEERS/$FILE-tokens.txt"
echo "$PEER down at $(accepted) accepted ($((STOPPED - START)) s after the send; load average $(cut -d' ' -f1-3 /proc/loadavg)), for $DOWN s"
sleep 5
CIRCUITS=$(curl -s "http://127.0.0.1:$PORT/health" | grep -o '"state":"[a-z_]*"' | sort | uniq -c | tr "\n" " " || true)
echo "/health 5 s into the outage: provider circuits ${CIRCUITS:-none}"
sleep $((DOWN - 5))
read -r _ PUSHES_DURING < "$PEERS/$FILE-tokens.txt"
echo "accepted while down: $(accepted) (answers recorded after the stop included); pushes the peer took while down: $((PUSHES_DURING - PUSHES_AT_STOP))"
rm -f "$PEERS/$FILE-down"
UP=$(date +%s)
echo "$PEER up again"
LIMIT=$((UP + 1200))
while [ "$(terminal)" != t ]; do
  [ "$(date +%s)" -gt "$LIMIT" ] && { echo "not finished 20 minutes after the peer came back" >&2; break; }
  sleep 1
done
DONE=$(date +%s)
sleep 1
read -r DISTINCT TOTAL < "$PEERS/$FILE-tokens.txt"
echo "recipients by status:"
$PG -Atc "select '  ' || status || ' ' || coalesce(last_error, '') || ': ' || count(*) from notification_recipient_states
          where notification_id = '$ID' group by status, last_error order by 1"
STATUS=$($PG -Atc "select status from notifications where id = '$ID'")
ROWS=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$ID'")
ACCEPTED=$(accepted)
LATE=$($PG -Atc "select count(*) from notification_recipient_states r join notifications n on n.id = r.notification_id
                 where r.notification_id = '$ID' and r.status = 'accepted'
                   and r.updated_at > coalesce(r.expires_at, coalesce(n.queued_at, n.created_at) + n.ttl * interval '1 second')")
LOST=$((DEVICES - ACCEPTED))
echo "notification $STATUS: $ROWS rows, $ACCEPTED accepted; finished $((DONE - UP)) s after $PEER came back ($((DONE - START)) s in all); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "lost: $LOST; sent twice: $((TOTAL - DISTINCT)) (the peer took $TOTAL pushes for $DISTINCT devices); late: $LATE"
[ "$LOST" -eq 0 ] || exit 1
