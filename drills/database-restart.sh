#!/usr/bin/env bash
# Drill: the machine's PostgreSQL restarted during a send. One instance (all roles) on the machine's
# PostgreSQL (a fresh database, dropped at the end) and Redis, the local peers in their own JVM
# (bench/FanoutPeers; APNs behind its relay, which counts distinct tokens). One notification (ttl 1
# day) to DEVICES iOS devices while two wrk generators post registrations and events (CONCURRENCY
# connections each); at AT_PERCENT accepted the cluster is stopped (pg_ctlcluster, fast mode: every
# connection cut), stays down DOWN_SECONDS (0: `restart`) and is started again. Prints what every
# recipient ended as, what was lost (not accepted), sent twice (pushes the peer took beyond one per
# device) and late, how long after the restart the send finished, the clients' answers by status
# (5xx, and 5xx without Retry-After, should be 503s with it only), and exits non-zero when anything
# was lost or a client saw a 5xx without Retry-After.
#   drills/database-restart.sh [devices=100000] [down_seconds=10] [at_percent=30]
# Restarting the machine's PostgreSQL stops everything else using it: run it only when nothing else
# does. The cluster is started again whatever happens (trap). DRILL_KEEP=1 keeps the data directory.
source "$(dirname "$0")/lib.sh"
DEVICES=${1:-100000}
DOWN=${2:-10}
AT=${3:-30}
CONCURRENCY=${CONCURRENCY:-2}
BASE_PORT=${BASE_PORT:-18330}
CLUSTER_VERSION=${CLUSTER_VERSION:-$(ls /etc/postgresql | head -n 1)}
need_wrk
pg_start() {
  pg_isready -q -h 127.0.0.1 -p 5432 && return 0
  pg_ctlcluster --skip-systemctl-redirect "$CLUSTER_VERSION" main start || true
  for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 1; done
  echo "PostgreSQL did not come back" >&2
}
cleanup() {
  [ -n "${WRK_PIDS:-}" ] && kill $WRK_PIDS 2>/dev/null || true
  pg_start
  drill_cleanup
}
trap cleanup EXIT
drill_setup database-restart
start_peers relay
echo "database $DB; load average $(loadavg)"
start_instance svc "$BASE_PORT" api,worker,scheduler
drill_app svc
echo "loading $DEVICES iOS devices ..."
load_devices ios "$DEVICES"
$PG -Atc "select id from devices where app_id = '$APP' limit 1000" >"$DATA/devices.txt"

phase load 3600 # stopped below, once the send is done
ID=$(send '{"title":"Drill","body":"database restart","ttl":86400,"target":{"type":"all"}}')
START=$(date +%s)
THRESHOLD=$((DEVICES * AT / 100))
while [ "$(accepted "$ID")" -lt "$THRESHOLD" ]; do
  [ "$(terminal "$ID")" = t ] && { echo "finished before $AT% were accepted: use more devices" >&2; exit 1; }
  sleep 0.2
done
echo "stopping PostgreSQL $CLUSTER_VERSION at $(accepted "$ID") accepted ($(($(date +%s) - START)) s after the send)"
if [ "$DOWN" -eq 0 ]; then
  pg_ctlcluster --skip-systemctl-redirect "$CLUSTER_VERSION" main restart
else
  pg_ctlcluster --skip-systemctl-redirect "$CLUSTER_VERSION" main stop -m fast
  sleep 3
  echo "  /health while down: HTTP $(curl -s -m 5 -o "$DATA/health.json" -w '%{http_code}' "$BASE/health") $(head -c 200 "$DATA/health.json")"
  sleep $((DOWN > 3 ? DOWN - 3 : 0))
  pg_start
fi
UP=$(date +%s)
echo "PostgreSQL up again"
wait_terminal "$ID" 1200 || echo "not finished 20 minutes after the restart" >&2
DONE=$(date +%s)
sleep 5 # the clients' load goes on a little after the send
kill -INT $WRK_PIDS 2>/dev/null || true
for p in $WRK_PIDS; do while kill -0 "$p" 2>/dev/null; do sleep 0.2; done; done
WRK_PIDS=
sleep 1
read -r DISTINCT TOTAL < "$PEERS/apns-tokens.txt"
echo "recipients by status:"
by_status "$ID"
STATUS=$($PG -Atc "select status from notifications where id = '$ID'")
ROWS=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$ID'")
ACCEPTED=$(accepted "$ID")
LATE=$(late "$ID")
# the registrations of the load add devices the send may reach: every row not accepted is lost, and
# every loaded device without a row
LOST=$((ROWS - ACCEPTED + (ROWS < DEVICES ? DEVICES - ROWS : 0)))
echo "notification $STATUS: $ROWS rows, $ACCEPTED accepted; finished $((DONE - UP)) s after PostgreSQL came back ($((DONE - START)) s in all)"
echo "lost: $LOST; sent twice: $((TOTAL - DISTINCT)) (the peer took $TOTAL pushes for $DISTINCT devices); late: $LATE"
echo "clients during the send:"
phase_report load
FIVE=$(load_5xx); BARE=$(load_5xx_bare); CONN=$(load_connection_errors)
echo "service log: $(grep -c ' ERROR ' "$DATA/svc/service.log" || true) errors, $(grep -c ' WARN ' "$DATA/svc/service.log" || true) warnings; most frequent:"
grep -E ' (ERROR|WARN) ' "$DATA/svc/service.log" | cut -c14-200 | sort | uniq -c | sort -rn | head -6 | sed 's/^/    /' || true
echo "clients: 5xx $FIVE ($BARE without Retry-After), connection errors $CONN; load average $(loadavg)"
[ "$LOST" -eq 0 ] && [ "$BARE" -eq 0 ] || exit 1
