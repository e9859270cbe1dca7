#!/usr/bin/env bash
# Drill: FCM answers a storm of 429s and 503s during a send. One instance (all roles) on the machine's
# PostgreSQL (a fresh database, dropped at the end) and Redis, the local peers in their own JVM
# (bench/FanoutPeers). One notification (ttl TTL) to DEVICES Android devices; from its start and for
# STORM_SECONDS the FCM peer answers 15% of sends 429 with Retry-After (RETRY_AFTER s), 15% 429 without
# it, 10% 503. Transactional single-device sends go once a second to one Android device (the same FCM
# project, so the same circuit) and one iOS device (another provider) throughout. Prints FCM's request
# rate every 10 s and over the storm, every recipient's end state, what was lost (not accepted), sent
# twice (pushes FCM accepted beyond one per recipient) and late (accepted after its TTL), the
# transactional sends' latency (p50, p99: created -> recorded accepted), and exits non-zero when
# anything was lost.
#   drills/provider-storm.sh [devices=100000] [storm_seconds=120] [ttl=3600]
# A 429 without Retry-After pauses the FCM project's circuit for PUSH_DELIVERY_BREAKER_RATE_LIMIT_BACKOFF
# (60 s, doubling while 429s follow); set it in the environment to run the drill at another pause.
# RETRY_AFTER (5) is the Retry-After the peer sends. DRILL_KEEP=1 keeps the data directory.
source "$(dirname "$0")/lib.sh"
DEVICES=${1:-100000}
STORM=${2:-120}
TTL=${3:-3600}
RETRY_AFTER=${RETRY_AFTER:-5}
BASE_PORT=${BASE_PORT:-18310}
trap drill_cleanup EXIT
drill_setup provider-storm
EXTRA=()
[ -n "${PUSH_DELIVERY_BREAKER_RATE_LIMIT_BACKOFF:-}" ] && EXTRA+=("PUSH_DELIVERY_BREAKER_RATE_LIMIT_BACKOFF=$PUSH_DELIVERY_BREAKER_RATE_LIMIT_BACKOFF")
start_peers
echo "database $DB; load average $(loadavg)"
start_instance svc "$BASE_PORT" api,worker,scheduler "${EXTRA[@]}"
drill_app svc
echo "loading $DEVICES Android devices ..."
load_devices android "$DEVICES"
$PG -c "insert into devices (id, app_id, platform, token, token_hash, created_at) values
        (gen_random_uuid(), '$APP', 'android', 'fcm-probe', sha256('fcm-probe'::bytea), now() - interval '3 days'),
        (gen_random_uuid(), '$APP', 'ios', encode(sha256('ios-probe'::bytea), 'hex'), sha256(encode(sha256('ios-probe'::bytea), 'hex')::bytea), now() - interval '3 days')"
PROBE_ANDROID=$($PG -Atc "select id from devices where token = 'fcm-probe'")
PROBE_IOS=$($PG -Atc "select id from devices where platform = 'ios'")
probes() { # probes DEVICE TIMES_FILE: transactional sends once a second until probes.stop exists
  "$JAVA" -Xmx64m -XX:TieredStopAtLevel=1 -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
    dev.pushservice.bench.ProbeClient "$BASE" "$KEY" "$1" 0 1000 "$2" "$DATA/probes.go" "$DATA/probes.stop" 2>>"$DATA/probes.log"
}
probes "$PROBE_ANDROID" "$DATA/probes-android.txt" & PA=$!
probes "$PROBE_IOS" "$DATA/probes-ios.txt" & PI=$!
sleep 3
read -r ANSWERED0 ACCEPTED0 _ < "$PEERS/fcm.txt"
echo "0.15 0.15 0.10 $RETRY_AFTER" > "$PEERS/fcm-storm.tmp" && mv "$PEERS/fcm-storm.tmp" "$PEERS/fcm-storm"
sleep 0.3
# to all: the DEVICES and the two probe devices
ID=$(send "{\"title\":\"Drill\",\"body\":\"provider storm\",\"ttl\":$TTL,\"target\":{\"type\":\"all\"}}")
START=$(date +%s)
touch "$DATA/probes.go"
echo "storm on (15% 429 with Retry-After: $RETRY_AFTER, 15% 429 without, 10% 503) for $STORM s; notification $ID"
prev=$ANSWERED0
for ((t = 10; t <= STORM; t += 10)); do
  sleep 10
  read -r a acc errs < "$PEERS/fcm.txt"
  echo "  ${t} s: FCM answered $((a - prev)) in 10 s ($(( (a - prev) / 10 ))/s), $((acc - ACCEPTED0)) accepted in all, storm errors $errs; recipients accepted $(accepted "$ID"); circuits $(curl -s "$BASE/health" | grep -o '"state":"[a-z_]*"' | sort | uniq -c | tr -s ' \n' ' ')"
  prev=$a
done
rm -f "$PEERS/fcm-storm"
read -r ANSWERED1 ACCEPTED1 ERRS < "$PEERS/fcm.txt"
STORM_END=$(date +%s)
echo "storm off: during it FCM answered $((ANSWERED1 - ANSWERED0)) sends ($(( (ANSWERED1 - ANSWERED0) / (STORM_END - START) ))/s), $ERRS of them storm errors, $((ACCEPTED1 - ACCEPTED0)) accepted"
wait_terminal "$ID" "$((TTL + 60))" || echo "not finished within its TTL" >&2
DONE=$(date +%s)
touch "$DATA/probes.stop"; wait "$PA" "$PI" 2>/dev/null || true
sleep 1
read -r _ ACCEPTED2 _ < "$PEERS/fcm.txt"
echo "recipients by status:"
by_status "$ID"
STATUS=$($PG -Atc "select status from notifications where id = '$ID'")
ROWS=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$ID'")
ACCEPTED=$(accepted "$ID")
LATE=$(late "$ID")
LOST=$((DEVICES + 2 - ACCEPTED))
ANDROID_ACCEPTED=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$ID' and status = 'accepted' and platform = 'android'")
ids() { [ -s "$1" ] && cut -d' ' -f4 "$1" | sed "s/.*/'&'/" | paste -sd, - || echo "'00000000-0000-0000-0000-000000000000'"; }
PROBES_FCM=$($PG -Atc "select count(*) from notification_recipient_states where notification_id in ($(ids "$DATA/probes-android.txt")) and status = 'accepted'")
echo "notification $STATUS: $ROWS rows, $ACCEPTED accepted; finished $((DONE - START)) s after the send, $((DONE - STORM_END)) s after the storm"
echo "lost: $LOST; sent twice: $((ACCEPTED2 - ACCEPTED0 - ANDROID_ACCEPTED - PROBES_FCM)) (FCM accepted $((ACCEPTED2 - ACCEPTED0)) pushes for $ANDROID_ACCEPTED Android recipients and $PROBES_FCM transactional sends); late: $LATE"
for platform in android ios; do
  f="$DATA/probes-$platform.txt"
  [ -s "$f" ] || { echo "transactional to $platform: no 202"; continue; }
  $PG -At -F ' ' <<SQL | while read -r n ok p50 p99 max; do
select count(*), count(*) filter (where r.status = 'accepted'),
       percentile_cont(0.5) within group (order by ms), percentile_cont(0.99) within group (order by ms), max(ms)
from (select r.status, extract(epoch from coalesce(case when r.status = 'accepted' then r.updated_at end, now()) - n.created_at) * 1000 as ms
      from notifications n join notification_recipient_states r on r.notification_id = n.id
      where n.id in ($(ids "$f"))) r;
SQL
    printf 'transactional to %s during the send: %s sends, %s accepted; created -> recorded accepted p50 %.0f ms, p99 %.0f ms, max %.0f ms (unaccepted counted to now)\n' \
      "$platform" "$n" "$ok" "$p50" "$p99" "$max"
  done
  # the same sends less those the peer itself refused (429/503 to that very request): what the
  # service adds, which the storm's pause must not hold back
  $PG -At -F ' ' <<SQL | while read -r n p50 p99 max; do
select count(*), percentile_cont(0.5) within group (order by ms), percentile_cont(0.99) within group (order by ms), max(ms)
from (select extract(epoch from r.updated_at - n.created_at) * 1000 as ms
      from notifications n join notification_recipient_states r on r.notification_id = n.id
      where n.id in ($(ids "$f")) and r.status = 'accepted' and r.attempts = 1) r;
SQL
    printf 'transactional to %s accepted at the first attempt (the peer refused none of their requests): %s sends; created -> recorded accepted p50 %.0f ms, p99 %.0f ms, max %.0f ms\n' \
      "$platform" "$n" "$p50" "$p99" "$max"
  done
done
echo "probe answers other than 202: $(cat "$DATA/probes.log" 2>/dev/null | grep -c 'HTTP\|Exception' || true); load average $(loadavg)"
[ "$LOST" -eq 0 ] || exit 1
