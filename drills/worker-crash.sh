#!/usr/bin/env bash
# Drill: a worker instance killed with -9 in the middle of a send. On the machine's PostgreSQL (a fresh
# database, dropped at the end) and Redis: one instance with PUSH_ROLES=api,scheduler and two with
# PUSH_ROLES=worker, the local peers in their own JVM (bench/FanoutPeers; APNs behind its relay, which
# counts distinct tokens). One notification (ttl 1 day) to DEVICES iOS devices; at AT_PERCENT accepted
# the worker running the send's fan-out (both deliver about half of it: the fan-out hands its own lane
# only its share) is killed with -9. Prints what was in flight at the kill, every recipient's end state, what was lost
# (not accepted), sent twice (pushes the peer took beyond one per device) and late (accepted after
# its TTL), the time to completion, and exits non-zero when anything was lost.
#   drills/worker-crash.sh [devices=300000] [at_percent=50]
# DRILL_KEEP=1 keeps the data directory (each instance's service.log, peers.log). Service defaults
# (PUSH_DELIVERY_LEASE 2m) unless given in the environment, e.g. PUSH_DELIVERY_LEASE=30s.
source "$(dirname "$0")/lib.sh"
DEVICES=${1:-300000}
AT=${2:-50}
BASE_PORT=${BASE_PORT:-18300}
trap '[ -n "${PROGRESS:-}" ] && kill "$PROGRESS" 2>/dev/null || true; drill_cleanup' EXIT
drill_setup worker-crash
EXTRA=()
[ -n "${PUSH_DELIVERY_LEASE:-}" ] && EXTRA+=("PUSH_DELIVERY_LEASE=$PUSH_DELIVERY_LEASE")
start_peers relay
echo "database $DB; load average $(loadavg)"
start_instance api "$BASE_PORT" api,scheduler "${EXTRA[@]}"
drill_app api
start_instance worker1 $((BASE_PORT + 1)) worker "${EXTRA[@]}"
start_instance worker2 $((BASE_PORT + 2)) worker "${EXTRA[@]}"
echo "loading $DEVICES iOS devices ..."
load_devices ios "$DEVICES"

ID=$(send '{"title":"Drill","body":"worker crash","ttl":86400,"target":{"type":"all"}}')
START=$(date +%s.%N)
THRESHOLD=$((DEVICES * AT / 100))
# the busier worker over one second, once the send is under way, is the one delivering it
while [ "$(accepted "$ID")" -lt $((DEVICES / 20)) ]; do sleep 0.2; done
c1=$(cpu_ticks "${PIDS[worker1]}"); c2=$(cpu_ticks "${PIDS[worker2]}"); sleep 1
d1=$(($(cpu_ticks "${PIDS[worker1]}") - c1)); d2=$(($(cpu_ticks "${PIDS[worker2]}") - c2))
VICTIM=worker1; SURVIVOR=worker2; [ "$d2" -gt "$d1" ] && VICTIM=worker2 && SURVIVOR=worker1
# more reliable than CPU on a loaded machine: the worker whose log shows the send's fan-out running
for w in worker1 worker2; do
  if grep -q "Notification $ID processing: materializing" "$DATA/$w/service.log" 2>/dev/null; then
    VICTIM=$w; [ "$w" = worker1 ] && SURVIVOR=worker2 || SURVIVOR=worker1
  fi
done
while [ "$(accepted "$ID")" -lt "$THRESHOLD" ]; do
  [ "$(terminal "$ID")" = t ] && { echo "finished before $AT% were accepted: use more devices" >&2; exit 1; }
  sleep 0.2
done
stop_instance "$VICTIM" KILL
KILLED=$(date +%s.%N)
FLIGHT=$(in_flight "$ID")
read -r _ PUSHES_AT_KILL < "$PEERS/apns-tokens.txt"
echo "killed $VICTIM (-9; the fan-out's worker by its log, else the busier: CPU over one second early in the send worker1 $d1, worker2 $d2 ticks) at $(accepted "$ID") accepted," \
     "$(awk -v a="$KILLED" -v b="$START" 'BEGIN { printf "%.1f", a - b }') s after the send; $FLIGHT in flight (sending or handed over, unrecorded);" \
     "the peer had taken $PUSHES_AT_KILL pushes"
( while sleep 10; do echo "  $(( $(date +%s) - ${KILLED%.*} )) s after the kill: $(accepted "$ID") accepted, $(in_flight "$ID") sending or handed over"; done ) &
PROGRESS=$!
wait_terminal "$ID" 1800 || echo "not finished 30 minutes after the kill" >&2
kill "$PROGRESS" 2>/dev/null || true
DONE=$(date +%s.%N)
sleep 1
read -r DISTINCT TOTAL < "$PEERS/apns-tokens.txt"
echo "recipients by status:"
by_status "$ID"
STATUS=$($PG -Atc "select status from notifications where id = '$ID'")
ROWS=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$ID'")
ACCEPTED=$(accepted "$ID")
LATE=$(late "$ID")
LOST=$((DEVICES - ACCEPTED))
awk -v s="$START" -v k="$KILLED" -v d="$DONE" -v st="$STATUS" -v r="$ROWS" -v a="$ACCEPTED" 'BEGIN {
  printf "notification %s: %d rows, %d accepted; completed %.1f s after the send, %.1f s after the kill\n", st, r, a, d - s, d - k }'
echo "lost: $LOST; sent twice: $((TOTAL - DISTINCT)) (the peer took $TOTAL pushes for $DISTINCT devices; in flight at the kill: $FLIGHT); late: $LATE"
echo "$SURVIVOR's log: $(grep -c -E ' (WARN|ERROR) ' "$DATA/$SURVIVOR/service.log" || true) warnings/errors; load average $(loadavg)"
[ "$LOST" -eq 0 ] || exit 1
