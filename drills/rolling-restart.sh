#!/usr/bin/env bash
# Drill: a rolling restart. Three instances (all roles) on the machine's PostgreSQL (a fresh database,
# dropped at the end) and Redis, the local peers in their own JVM (bench/FanoutPeers; APNs behind its
# relay, which counts distinct tokens). Under steady load on every instance (wrk: registrations and
# events, CONCURRENCY connections each per instance) and sends (one notification to all DEVICES iOS
# devices at the start, then a single-device transactional one every second, round-robin over the
# instances), each instance in turn is stopped (SIGTERM: graceful shutdown), started again and given
# SETTLE seconds. Prints every notification's outcome, what was lost (recipients not accepted), sent
# twice (pushes the peer took beyond one per recipient), the clients' answers by status (refused
# connections are expected while an instance is down; 5xx must be 503s with Retry-After), and exits
# non-zero when anything was lost or a client saw a 5xx without Retry-After.
#   drills/rolling-restart.sh [devices=30000] [settle_seconds=20]
# DRILL_KEEP=1 keeps the data directory.
source "$(dirname "$0")/lib.sh"
DEVICES=${1:-30000}
SETTLE=${2:-20}
CONCURRENCY=${CONCURRENCY:-1}
BASE_PORT=${BASE_PORT:-18340}
need_wrk
ALL_WRK=
trap '[ -n "${SENDER:-}" ] && kill "$SENDER" 2>/dev/null || true; [ -n "$ALL_WRK" ] && kill $ALL_WRK 2>/dev/null || true; drill_cleanup' EXIT
drill_setup rolling-restart
start_peers relay
echo "database $DB; load average $(loadavg)"
NAMES=(a b c)
start_instance a "$BASE_PORT" api,worker,scheduler
drill_app a
start_instance b $((BASE_PORT + 1)) api,worker,scheduler
start_instance c $((BASE_PORT + 2)) api,worker,scheduler
echo "loading $DEVICES iOS devices ..."
load_devices ios "$DEVICES"
$PG -Atc "select id from devices where app_id = '$APP' limit 1000" >"$DATA/devices.txt"
PROBE=$($PG -Atc "select id from devices where app_id = '$APP' order by created_at limit 1")

for name in "${NAMES[@]}"; do
  BASE="http://127.0.0.1:${PORTS[$name]}" phase "load-$name" 3600
  ALL_WRK="$ALL_WRK $WRK_PIDS"
done
BULK=$(send '{"title":"Drill","body":"rolling restart","ttl":86400,"target":{"type":"all"}}')
echo "$BULK" >"$DATA/notifications.txt"
# transactional sends, one a second, round-robin; each line: HTTP status (000: no connection) and id
(
  i=0
  while [ ! -e "$DATA/sender.stop" ]; do
    name=${NAMES[$((i % 3))]}; i=$((i + 1))
    out=$(curl -s -m 10 -w ' %{http_code}' -X POST -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
      -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" \
      -d "{\"title\":\"code\",\"body\":\"rolling\",\"priority\":\"transactional\",\"target\":{\"type\":\"device\",\"device_id\":\"$PROBE\"}}" \
      "http://127.0.0.1:${PORTS[$name]}/v1/notifications" || true)
    code=${out##* }
    id=$(echo "$out" | grep -o '"notification_id":"[^"]*"' | cut -d'"' -f4 || true)
    echo "$name $code ${id:-}" >>"$DATA/sends.txt"
    sleep 1
  done
) &
SENDER=$!
sleep 5
for name in "${NAMES[@]}"; do
  echo "restarting $name at $(accepted "$BULK") accepted of the bulk send"
  stop_instance "$name" TERM
  sleep 2
  start_instance "$name" "${PORTS[$name]}" api,worker,scheduler
  echo "  $name up again"
  sleep "$SETTLE"
done
touch "$DATA/sender.stop"; wait "$SENDER" 2>/dev/null || true; SENDER=
awk '$3 != "" { print $3 }' "$DATA/sends.txt" >>"$DATA/notifications.txt"
IDS=$(sed "s/.*/'&'/" "$DATA/notifications.txt" | paste -sd, -)
LIMIT=$(($(date +%s) + 600))
while [ "$($PG -Atc "select count(*) from notifications where id in ($IDS) and status not in ('completed', 'failed', 'cancelled')")" != 0 ]; do
  [ "$(date +%s)" -gt "$LIMIT" ] && { echo "notifications not finished 10 minutes after the last restart" >&2; break; }
  sleep 1
done
kill -INT $ALL_WRK 2>/dev/null || true
for p in $ALL_WRK; do while kill -0 "$p" 2>/dev/null; do sleep 0.2; done; done
ALL_WRK=
sleep 1
read -r DISTINCT TOTAL < "$PEERS/apns-tokens.txt"
echo "bulk notification:"; by_status "$BULK"
echo "transactional sends: $(wc -l <"$DATA/sends.txt") posted; by instance and status: $(awk '{ print $1 " " $2 }' "$DATA/sends.txt" | sort | uniq -c | tr -s ' \n' ' ')"
echo "notifications by status: $($PG -Atc "select string_agg(status || ' ' || n, ', ') from (select status, count(*) n from notifications where id in ($IDS) group by status) s")"
ROWS=$($PG -Atc "select count(*) from notification_recipient_states where notification_id in ($IDS)")
ACCEPTED=$($PG -Atc "select count(*) from notification_recipient_states where notification_id in ($IDS) and status = 'accepted'")
BULK_ROWS=$($PG -Atc "select count(*) from notification_recipient_states where notification_id = '$BULK'")
LOST=$((ROWS - ACCEPTED + (BULK_ROWS < DEVICES ? DEVICES - BULK_ROWS : 0)))
# the probe device gets one push per transactional send: pushes beyond one per accepted recipient row were sent twice
echo "lost: $LOST; sent twice: $((TOTAL - ACCEPTED)) (the peer took $TOTAL pushes for $ACCEPTED accepted recipients, $DISTINCT devices)"
echo "clients (wrk, every instance):"
for name in "${NAMES[@]}"; do phase_report "load-$name"; done
FIVE=$(load_5xx); BARE=$(load_5xx_bare); CONN=$(load_connection_errors)
SEND5=$(awk '$2 ~ /^5/' "$DATA/sends.txt" | wc -l)
echo "clients: 5xx $FIVE ($BARE without Retry-After), connection errors $CONN (an instance down); transactional sends answered 5xx: $SEND5; load average $(loadavg)"
[ "$LOST" -eq 0 ] && [ "$BARE" -eq 0 ] || exit 1
