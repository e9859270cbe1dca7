#!/usr/bin/env bash
# Bench: one large send spread over two worker instances (issue 29, item 1). On the machine's
# PostgreSQL (a fresh database, dropped at the end): one instance with PUSH_ROLES=api,scheduler and
# two with PUSH_ROLES=worker, the local peers in their own JVM (bench/FanoutPeers), as
# drills/worker-crash.sh starts them. Once both workers count each other alive (push_workers_alive),
# one bulk notification to DEVICES iOS devices. Prints each worker's share of the recipients the APNs
# peer accepted (push_delivery_delivered_total from each worker's /actuator/prometheus: handed over by
# its fan-out, claimed from the table), which worker ran the fan-out, and the total rate from the send
# to the last recipient recorded, with the load average before and after.
#   bench/spread.sh [devices=1000000]
# DRILL_KEEP=1 keeps the data directory (each instance's service.log, peers.log).
source "$(dirname "$0")/../drills/lib.sh"
DEVICES=${1:-1000000}
BASE_PORT=${BASE_PORT:-18400}
trap drill_cleanup EXIT
drill_setup spread
start_peers
LOAD_BEFORE=$(loadavg)
echo "database $DB; $DEVICES iOS devices; load average $LOAD_BEFORE"
start_instance api "$BASE_PORT" api,scheduler
drill_app api
start_instance worker1 $((BASE_PORT + 1)) worker
start_instance worker2 $((BASE_PORT + 2)) worker
echo "loading $DEVICES iOS devices ..."
load_devices ios "$DEVICES"

metrics() { curl -s "http://127.0.0.1:${PORTS[$1]}/actuator/prometheus"; }
# delivered NAME [handed|claimed]: recipients the worker sent and the peer accepted (all lanes and platforms)
delivered() {
  metrics "$1" | awk -v via="${2:-}" '/^push_delivery_delivered_total\{/ && (via == "" || index($0, "via=\"" via "\"")) { s += $NF }
    END { printf "%d", s }'
}
alive() { metrics "$1" | awk '/^push_workers_alive/ { printf "%d", $NF }'; }

for _ in $(seq 1 60); do
  [ "$(alive worker1)" = 2 ] && [ "$(alive worker2)" = 2 ] && break
  sleep 1
done
echo "workers alive as each sees it: worker1 $(alive worker1), worker2 $(alive worker2)"
B1=$(delivered worker1); B2=$(delivered worker2)
C0=$(cpu_ticks "${PIDS[worker1]}" "${PIDS[worker2]}" "${PIDS[api]}")
W10=$(cpu_ticks "${PIDS[worker1]}"); W20=$(cpu_ticks "${PIDS[worker2]}"); A0=$(cpu_ticks "${PIDS[api]}")
# the machine's PostgreSQL: every process of its cluster (pooled backends live through the send)
pg_ticks() { local t=0 pid; for pid in $(pgrep -u postgres); do [ -r "/proc/$pid/stat" ] && t=$((t + $(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null || echo 0))); done; echo "$t"; }
P0=$(pg_ticks)

ID=$(send '{"title":"Bench","body":"spread","priority":"bulk","ttl":86400,"target":{"type":"all"}}')
START=$(date +%s.%N)
( while sleep 10; do
    echo "  $(( $(date +%s) - ${START%.*} )) s: worker1 $(( $(delivered worker1) - B1 )), worker2 $(( $(delivered worker2) - B2 )) delivered"
  done ) &
PROGRESS=$!
trap 'kill "$PROGRESS" 2>/dev/null || true; drill_cleanup' EXIT
wait_terminal "$ID" 3600 || echo "not finished within an hour" >&2
kill "$PROGRESS" 2>/dev/null || true
C1=$(cpu_ticks "${PIDS[worker1]}" "${PIDS[worker2]}" "${PIDS[api]}")
W11=$(cpu_ticks "${PIDS[worker1]}"); W21=$(cpu_ticks "${PIDS[worker2]}"); A1=$(cpu_ticks "${PIDS[api]}")
P1=$(pg_ticks)
D1=$(( $(delivered worker1) - B1 )); D2=$(( $(delivered worker2) - B2 ))
H1=$(delivered worker1 handed); H2=$(delivered worker2 handed)
FANOUT=none
for w in worker1 worker2; do
  grep -q "Notification $ID processing: materializing" "$DATA/$w/service.log" 2>/dev/null && FANOUT=$w
done
SECONDS_TAKEN=$($PG -Atc "select extract(epoch from (finished_at - created_at)) from notifications where id = '$ID'")
echo "recipients by status:"
by_status "$ID"
awk -v d1="$D1" -v d2="$D2" -v h1="$H1" -v h2="$H2" -v n="$DEVICES" -v s="$SECONDS_TAKEN" -v f="$FANOUT" \
    -v cpu=$(( C1 - C0 )) -v w1=$(( W11 - W10 )) -v w2=$(( W21 - W20 )) -v api=$(( A1 - A0 )) -v pg=$(( P1 - P0 )) \
    -v hz="$(getconf CLK_TCK)" 'BEGIN {
  t = d1 + d2
  printf "worker1: %d delivered (%.1f%%; %d handed over: its fan-out'"'"'s share or handovers it leased; %d claimed row by row)\n", d1, 100 * d1 / (t ? t : 1), h1, d1 - h1
  printf "worker2: %d delivered (%.1f%%; %d handed over: its fan-out'"'"'s share or handovers it leased; %d claimed row by row)\n", d2, 100 * d2 / (t ? t : 1), h2, d2 - h2
  printf "fan-out ran on %s; %d of %d devices delivered; send to completed %.1f s: %.0f recipients/s; CPU of the three instances %.1f s\n",
    f, t, n, s, t / (s ? s : 1), cpu / hz
  printf "CPU from the send to completed: worker1 %.1f s, worker2 %.1f s, api %.1f s, PostgreSQL %.1f s; per recipient %.0f us (instances) + %.0f us (PostgreSQL)\n",
    w1 / hz, w2 / hz, api / hz, pg / hz, 1e6 * cpu / hz / (t ? t : 1), 1e6 * pg / hz / (t ? t : 1)
}'
echo "load average before $LOAD_BEFORE, after $(loadavg)"
