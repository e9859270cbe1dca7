#!/usr/bin/env bash
# Scale benchmark (issue 29, "Measured here"): the service on the machine's PostgreSQL (a fresh
# database, dropped at the end) and Redis, the local peers in their own JVM (bench/FanoutPeers), one
# app with DEVICES iOS devices (5 per user, with users, locales and versions as bench/estimate-data.sql
# makes them; 3% disabled, 2% invalidated), loaded set-based (bench/load-devices.sql), each device with the
# time-ordered id (V56) of its created_at, as the service gives a device at registration. Prints each
# figure beside its target from the issue and PASS or MISS. Asserts nothing (exit 0 with a MISS).
#   bench/scale.sh [devices=10000000]
# SCALE_PARTS (comma-separated, default all): which parts run, in this order:
#   send          one bulk send to all at 100,000 devices (after SCALE_WARMUP=1 unmeasured ones), then
#                 the devices loaded up to DEVICES and one send to all: recipients/s of each and their
#                 ratio; the service's RSS (max, /proc) and heap (max used, and after a full GC via
#                 jcmd, after each send)
#   reads         during the large send: GET /v1/notifications/{id}, its recipient list (walked by
#                 cursor, 100 pages of 50 then from the start; and, reported beside it, random `page`s
#                 1..100 of 50, the OFFSET form, only with SCALE_OFFSET_READER=1: its deep pages read up to
#                 5,000 rows each and slow the measured readers beside it), registrations (bench/scale.lua, one connection each, a request every
#                 100 ms) and single-device transactional sends once a second (bench/ProbeClient:
#                 202 -> accepted by the APNs peer); p99 of each. Needs `send`.
#   cancel        a second send to all DEVICES, cancelled once CANCEL_AT (default 5) % are accepted:
#                 the cancel's answer time, and pushes the APNs peer accepted after the answer (its
#                 own clock, 100 ms ticks) against those in flight at the answer
#   estimate      device_event_last loaded for every device as bench/estimate-data.sql does, then
#                 bench/estimate.sh's five filters, SCALE_ESTIMATE_RUNS (10) times each after a first
#   registration  bench/registration.sh's load (wrk, concurrency 64, 50% repeated tokens) against the
#                 DEVICES-device table: requests/s, p99, CPU per registration
#   storage       bytes per notification_recipients row and per events row (events ingested through
#                 POST /v1/events for 10 s, bench/events.lua), and, when notification_recipients is
#                 partitioned, the time to detach and drop its largest partition
#   spread        (optional) with SPREAD_DEVICES (1,000,000, at most DEVICES) loaded: the instance
#                 replaced by one PUSH_ROLES=api,scheduler and two PUSH_ROLES=worker instances, one
#                 send to all, each worker's share of accepted pushes from its own
#                 push_delivery_outcomes_total{outcome="accepted"} (skipped when the metric is absent)
# SCALE_WARMUP (1): unmeasured sends before the first measured one, with an analyze of the recipients
# after them; with 0, the measured send on a fresh database may claim through plans made for an empty
# notification_recipients (README, "Running in production", step 2): a 2026-11-26 run at 0 claimed
# ~2,000 recipients in 4 minutes after its fan-out.
# SCALE_REG_REF: registrations/s of e029d80 on the same machine for the registration target (default
# 858, the issue's figure; measure it back to back for a real comparison). DRILL_KEEP=1 keeps the
# data directory (service logs, wrk outputs). BASE_PORT (18400) and the next three ports are used.
# DRILL_START_WAIT (180) seconds for an instance to start (more on a loaded machine).
source "$(dirname "$0")/../drills/lib.sh"
DEVICES=${1:-10000000}
PARTS=",${SCALE_PARTS:-send,reads,cancel,estimate,registration,storage,spread},"
SMALL=${SCALE_SMALL:-100000}
SPREAD_DEVICES=${SPREAD_DEVICES:-1000000}
CANCEL_AT=${CANCEL_AT:-5}
BASE_PORT=${BASE_PORT:-18400}
LOAD_CHUNK=${SCALE_LOAD_CHUNK:-1000000}
part() { [[ $PARTS == *",$1,"* ]]; }
[ "$SMALL" -le "$DEVICES" ] || SMALL=$DEVICES
[ "$SPREAD_DEVICES" -le "$DEVICES" ] || SPREAD_DEVICES=$DEVICES
for p in $(seq "$BASE_PORT" $((BASE_PORT + 3))); do
  if curl -s -o /dev/null "http://127.0.0.1:$p/"; then echo "port $p is in use; set BASE_PORT" >&2; exit 1; fi
done

BG_PIDS=()
scale_cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  drill_cleanup
}
trap scale_cleanup EXIT
need_wrk
drill_setup scale
JCMD="$(dirname "$(readlink -f "$JAVA")")/jcmd"
start_peers
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src || echo "+changes")
echo "scale benchmark: $DEVICES devices, parts ${PARTS//,/ }; database $DB; commit $COMMIT; load average $(loadavg); autovacuum $($PG -Atc 'show autovacuum')"
start_instance main "$BASE_PORT" api,worker,scheduler
drill_app main

# ---------------------------------------------------------------- figures and targets
RESULTS=$DATA/results.txt
: >"$RESULTS"
# verdict LABEL VALUE TARGET_TEXT OK(0/1): one line, kept for the summary at the end
verdict() {
  local mark=MISS; [ "$4" = 1 ] && mark=PASS
  printf '%-58s %-34s %-34s %s\n' "$1" "$2" "$3" "$mark" | tee -a "$RESULTS"
}
info() { printf '%-58s %s\n' "$1" "$2" | tee -a "$RESULTS"; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 < b + 0) ? 1 : 0 }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 >= b + 0) ? 1 : 0 }'; }
# pct P: nearest-rank percentile P of the numbers on standard input
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit } r = int(NR * p / 100); if (r < NR * p / 100) r++; if (r < 1) r = 1; print v[r] }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }'; }

# ---------------------------------------------------------------- loading
LOADED=0
# load_to N: devices LOADED+1..N (and their users), set-based in chunks of LOAD_CHUNK by bench/load-devices.sql
# (triggers off, the active-device counter set once at the end, then vacuum analyze).
load_to() {
  local target=$1 lo hi start final; [ "$target" -gt "$LOADED" ] || return 0
  start=$(date +%s.%N)
  for ((lo = LOADED + 1; lo <= target; lo += LOAD_CHUNK)); do
    hi=$((lo + LOAD_CHUNK - 1 < target ? lo + LOAD_CHUNK - 1 : target))
    final=false; [ "$hi" = "$target" ] && final=true
    $PG -v app="$APP" -v lo="$lo" -v hi="$hi" -v device_id='storage_uuid7(created)' -v final=$final \
      -f "$ROOT/bench/load-devices.sql" >/dev/null
    echo "  loaded devices $lo..$hi ($(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }') s so far)"
  done
  local secs; secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
  info "devices loaded $((LOADED + 1))..$target" "$secs s ($(awk -v n=$((target - LOADED)) -v s="$secs" 'BEGIN { printf "%.0f", n / s }') devices/s incl. vacuum analyze); devices table $(mib "$($PG -Atc "select pg_total_relation_size('devices')")") ($($PG -Atc "select pg_total_relation_size('devices') / count(*) from devices") bytes/device with indexes), users $(mib "$($PG -Atc "select pg_total_relation_size('users')")")"
  LOADED=$target
}

# ---------------------------------------------------------------- the service's memory
PID_MAIN() { echo "${PIDS[main]}"; }
heap_used() { # heap_used BASE: bytes of heap in use, from the instance's metrics
  curl -s "$1/actuator/prometheus" | awk '/^jvm_memory_used_bytes\{.*area="heap"/ { s += $NF } END { printf "%.0f\n", s }'
}
heap_after_gc() { # heap_after_gc NAME: a full GC (jcmd GC.run), then the heap in use
  "$JCMD" "${PIDS[$1]}" GC.run >/dev/null 2>&1 || true
  sleep 1
  heap_used "http://127.0.0.1:${PORTS[$1]}"
}
rss() { awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# memory sampler: every second "RSS HEAP" of the main instance into FILE, until killed
start_sampler() {
  ( while :; do echo "$(rss "$(PID_MAIN)") $(heap_used "$BASE")" >>"$1"; sleep 1; done ) &
  SAMPLER=$!; BG_PIDS+=("$SAMPLER")
}
stop_sampler() { kill "$SAMPLER" 2>/dev/null || true; wait "$SAMPLER" 2>/dev/null || true; }

# ---------------------------------------------------------------- sends
send_all() { send '{"title":"Sale","body":"Everything must go","priority":"bulk","target":{"type":"all"}}'; }
# rate ID: "recipients seconds recipients/s" from the 202 (created_at) to the last terminal recipient (finished_at)
rate() {
  $PG -At -F ' ' -c "select recipient_count, round(extract(epoch from finished_at - created_at)::numeric, 2),
                            round(recipient_count / nullif(extract(epoch from finished_at - created_at), 0))
                     from notifications where id = '$1'"
}
wait_done() { # wait_done ID: until terminal (no limit; a 10M send on a slow machine takes long)
  while [ "$(terminal "$1")" != t ]; do sleep 0.5; done
}

probes() { # bench/fanout.sh's transactional probes to device PROBE
  "$JAVA" -Xmx64m -XX:TieredStopAtLevel=1 -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" \
    dev.pushservice.bench.ProbeClient "$BASE" "$KEY" "$PROBE" "$@" 2>>"$DATA/probes.log"
}
# probe_p99 TIMES_FILE: "count p50 p99" of 202 -> accepted by the APNs peer, in ms (bench/fanout.sh's peer_latency)
probe_p99() {
  sleep 0.3
  [ -s "$1" ] && [ -s "$PEERS/arrivals.txt" ] || { echo "0 n/a n/a"; return; }
  local lat; lat=$(awk 'NR == FNR { at[$2] = $1; next } ($1 in at) { print (at[$1] - $3) / 1000 }' "$PEERS/arrivals.txt" "$1")
  echo "$(echo "$lat" | grep -c .) $(echo "$lat" | pct 50) $(echo "$lat" | pct 99)"
}
# paced KIND OUT [env...]: bench/scale.lua in the background, one connection, until STOP_READS exists (wrk runs 1 h at most)
paced() {
  local kind=$1 out=$2; shift 2
  env SCALE_KIND="$kind" "$@" wrk -t1 -c1 -d3600s --timeout 10s -s "$ROOT/bench/scale.lua" "$BASE" >"$out" 2>&1 &
  READERS+=($!)
}
stop_readers() { local p; for p in "${READERS[@]}"; do kill -INT "$p" 2>/dev/null || true; done; for p in "${READERS[@]}"; do wait "$p" 2>/dev/null || true; done; READERS=(); }

measured_send() { # measured_send LABEL [reads]: one send to all; sets RATE and SEND_ID
  local label=$1 reads=${2:-}
  : >"$DATA/mem-$label.txt"
  start_sampler "$DATA/mem-$label.txt"
  if [ -n "$reads" ]; then
    rm -f "$DATA/probes.go" "$DATA/probes.stop"
    probes 0 1000 "$DATA/probe-times.txt" "$DATA/probes.go" "$DATA/probes.stop" &
    PROBES_PID=$!; BG_PIDS+=("$PROBES_PID")
    sleep 2
  fi
  local pgpid s0 p0 s1 p1
  pgpid=$(head -n 1 "$($PG -Atc 'show data_directory')/postmaster.pid" 2>/dev/null || echo 0)
  s0=$(cpu_ticks "$(PID_MAIN)"); p0=$(cpu_ticks "$pgpid")
  SEND_ID=$(send_all)
  if [ -n "$reads" ]; then
    touch "$DATA/probes.go"
    READERS=()
    paced summary "$DATA/reads-summary.out" PUSH_KEY="$KEY" NOTIFICATION_ID="$SEND_ID"
    paced recipients "$DATA/reads-recipients.out" PUSH_KEY="$KEY" NOTIFICATION_ID="$SEND_ID"
    [ "${SCALE_OFFSET_READER:-0}" = 1 ] && paced recipients_page "$DATA/reads-recipients_page.out" PUSH_KEY="$KEY" NOTIFICATION_ID="$SEND_ID"
    paced register "$DATA/reads-register.out" PUSH_KEY="$PUBLIC_KEY" REPEAT_PERCENT=50
  fi
  wait_done "$SEND_ID"
  s1=$(cpu_ticks "$(PID_MAIN)"); p1=$(cpu_ticks "$pgpid")
  if [ -n "$reads" ]; then
    stop_readers
    touch "$DATA/probes.stop"; wait "$PROBES_PID" 2>/dev/null || true
  fi
  stop_sampler
  read -r n secs RATE < <(rate "$SEND_ID")
  info "send to all at $label devices" "$n recipients in $secs s: $RATE recipients/s ($($PG -Atc "select status from notifications where id = '$SEND_ID'"); load average $(loadavg))"
  MAX_RSS=$(awk '$1 > m { m = $1 } END { print m + 0 }' "$DATA/mem-$label.txt")
  MAX_HEAP=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$DATA/mem-$label.txt")
  AFTER_GC=$(heap_after_gc main)
  CPU_LINE=$(cpu_report recipient "$n" "$s0" "$s1" "$p0" "$p1")
  info "  CPU (PostgreSQL: all its backends, other databases' too)" "$CPU_LINE"
  info "  service memory during it (heap cap 768 MiB)" "max RSS $(mib "$MAX_RSS"), max heap used $(mib "$MAX_HEAP"), heap after a full GC $(mib "$AFTER_GC")"
}

# ---------------------------------------------------------------- send (and reads)
if part send || part spread; then
  # the warm-up also serves the spread part alone: its instances must not plan on an empty table
  load_to "$SMALL"
  for _ in $(seq 1 "${SCALE_WARMUP:-1}"); do
    echo "warm-up: one send to all $SMALL devices (not measured) ..."
    wait_done "$(send_all)"
  done
  $PG -c "vacuum analyze notification_recipients" >/dev/null
fi
if part send; then
  measured_send "$SMALL"
  RATE_SMALL=$RATE; HEAP_SMALL=$AFTER_GC
fi

if part spread; then
  load_to "$SPREAD_DEVICES"
  echo "spread: replacing the instance by api,scheduler + two workers ..."
  stop_instance main
  start_instance api $((BASE_PORT + 1)) api,scheduler
  BASE="http://127.0.0.1:${PORTS[api]}"
  start_instance worker1 $((BASE_PORT + 2)) worker
  start_instance worker2 $((BASE_PORT + 3)) worker
  accepted_metric() { # accepted_metric NAME: the instance's accepted pushes so far, or "absent"
    curl -s "http://127.0.0.1:${PORTS[$1]}/actuator/prometheus" \
      | awk '/^push_delivery_outcomes_total\{.*outcome="accepted"/ { s += $NF; seen = 1 } END { if (seen) printf "%.0f\n", s; else print "absent" }'
  }
  w1=$(accepted_metric worker1); w2=$(accepted_metric worker2)
  [ "$w1" = absent ] && w1=0; [ "$w2" = absent ] && w2=0 # no series yet: nothing accepted
  ID=$(send_all)
  wait_done "$ID"
  sleep 2
  read -r n secs total < <(rate "$ID")
  x1=$(accepted_metric worker1); x2=$(accepted_metric worker2)
  if [ "$x1" = absent ] || [ "$x2" = absent ]; then
    info "spread: two workers, one send to $n" "skipped: push_delivery_outcomes_total{outcome=\"accepted\"} absent from a worker's metrics"
  else
    d1=$((x1 - w1)); d2=$((x2 - w2))
    s1=$(awk -v a=$d1 -v b=$d2 'BEGIN { printf "%.1f", (a + b) ? 100 * a / (a + b) : 0 }')
    s2=$(awk -v a=$d1 -v b=$d2 'BEGIN { printf "%.1f", (a + b) ? 100 * b / (a + b) : 0 }')
    lo=$(awk -v a="$s1" -v b="$s2" 'BEGIN { print (a < b) ? a : b }')
    verdict "spread: smaller worker's share of a $n-recipient send" "worker1 $s1% ($d1), worker2 $s2% ($d2)" ">= 35% each" "$(ge "$lo" 35)"
    info "  spread: total rate" "$total recipients/s in $secs s (load average $(loadavg))"
  fi
  stop_instance worker1; stop_instance worker2; stop_instance api
  start_instance main "$BASE_PORT" api,worker,scheduler
  BASE="http://127.0.0.1:${PORTS[main]}"
fi

load_to "$DEVICES"
PROBE=$($PG -Atc "select id from devices where app_id = '$APP' and enabled and invalidated_at is null order by created_at limit 1")

if part send; then
  READS=; part reads && READS=1
  echo "one send to all $DEVICES devices${READS:+, with the readers}"
  measured_send "$DEVICES" "$READS"
  RATE_BIG=$RATE
  ratio=$(awk -v a="$RATE_BIG" -v b="$RATE_SMALL" 'BEGIN { printf "%.2f", a / b }')
  verdict "send: recipients/s at $DEVICES / at $SMALL" "$RATE_BIG / $RATE_SMALL = $ratio" ">= 0.75 (within 25%)" "$(ge "$ratio" 0.75)"
  growth=$((AFTER_GC - HEAP_SMALL))
  verdict "send: heap after GC at $DEVICES minus at $SMALL" "$(mib "$growth") ($(mib "$AFTER_GC") vs $(mib "$HEAP_SMALL"))" "flat: < 64 MiB more" "$(lt "$growth" 67108864)"
  info "send: max RSS during the $DEVICES send" "$(mib "$MAX_RSS") (report only)"
  if [ -n "$READS" ]; then
    for k in summary recipients recipients_page register; do
      f=$DATA/reads-$k.out
      if [ "$k" = recipients_page ] && [ ! -f "$f" ]; then info "GET .../recipients?page=1..100 during it (OFFSET)" "not run (SCALE_OFFSET_READER=1 runs it)"; continue; fi
      case $k in
        summary) label="GET /v1/notifications/{id} during the send"; target=50 ;;
        recipients) label="GET .../recipients by cursor (100 pages) during it"; target=50 ;;
        recipients_page) label="GET .../recipients?page=1..100 during it (OFFSET)"; target= ;;
        register) label="registration during the send"; target=100 ;;
      esac
      p=$(p99_of "$f"); bad=$(errors_of "$f")
      if [ -z "$target" ]; then info "$label" "p99 ${p:-n/a} ms over $(count_of "$f"), ${bad:-?} errors (report only: deep pages read every row before them)"; continue; fi
      if [ -z "$p" ]; then verdict "$label" "no summary (see $f)" "p99 < $target ms" 0; continue; fi
      verdict "$label" "p99 ${p} ms over $(count_of "$f"), $bad errors" "p99 < $target ms, no errors" "$( [ "$(lt "$p" "$target")" = 1 ] && [ "${bad:-0}" = 0 ] && echo 1 || echo 0)"
    done
    read -r pn p50 p99 < <(probe_p99 "$DATA/probe-times.txt")
    verdict "transactional 202 -> accepted by the peer, during" "p99 $p99 ms (p50 $p50) over $pn" "p99 < 250 ms" "$( [ "$pn" -gt 0 ] && lt "$p99" 250 || echo 0)"
  fi
fi

# ---------------------------------------------------------------- cancel
if part cancel; then
  echo "cancel: a second send to all $DEVICES devices, cancelled at $CANCEL_AT% accepted ..."
  ID=$(send_all)
  at=$((DEVICES * CANCEL_AT / 100)); [ "$at" -lt 1000 ] && at=1000
  while [ "$(accepted "$ID")" -lt "$at" ]; do
    [ "$(terminal "$ID")" = t ] && break
    sleep 0.1
  done
  code_time=$(curl -s -o "$DATA/cancel.json" -w '%{http_code} %{time_total}' -X POST -H "Authorization: Bearer $KEY" \
    -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" "$BASE/v1/notifications/$ID/cancel")
  ANSWER_MS=$(date +%s%3N)
  FLIGHT=$(in_flight "$ID")
  read -r code secs <<<"$code_time"
  ms=$(awk -v s="$secs" 'BEGIN { printf "%.0f", s * 1000 }')
  # settle: until the peer's count has not moved for 3 s
  last=-1; still=0
  while [ "$still" -lt 3 ]; do sleep 1; now=$(tail -n 1 "$PEERS/counts-log.txt" | cut -d' ' -f2); [ "$now" = "$last" ] && still=$((still + 1)) || still=0; last=$now; done
  read -r before after last_at < <(awk -v t="$ANSWER_MS" '$1 <= t { c0 = $2 } { cf = $2; la = $3 } END { print c0 + 0, cf - c0, la - t }' "$PEERS/counts-log.txt")
  verdict "cancel of a $DEVICES send: answer" "HTTP $code in $ms ms" "200 in < 200 ms" "$( [ "$code" = 200 ] && lt "$ms" 200 || echo 0)"
  # the peer's counts are 100 ms ticks, so "$after" also holds what it accepted in the answer's own tick before the
  # answer; its last accepted push's own time ("$last_at" ms after the answer, negative: before) is exact
  verdict "cancel: pushes the peer accepted after the answer" "<= $after (last ${last_at} ms after), $FLIGHT in flight" "none beyond those in flight" "$( { [ "$last_at" -le 0 ] || [ "$after" -le "$FLIGHT" ]; } && echo 1 || echo 0)"
  info "  cancel: recipients by status 5 s after settling" "$(sleep 5; $PG -Atc "select string_agg(status || ' ' || c, ', ') from (select status, count(*) c from notification_recipient_states where notification_id = '$ID' group by 1 order by 1) s"); notification $($PG -Atc "select status from notifications where id = '$ID'")"
fi

# ---------------------------------------------------------------- estimate
if part estimate; then
  echo "estimate: loading device_event_last for $DEVICES devices (bench/estimate-data.sql's shares) ..."
  start=$(date +%s.%N)
  $PG <<SQL
set synchronous_commit = off;
insert into device_event_last (app_id, device_id, event_key, last_at)
select d.app_id, d.id, k.key, now() - make_interval(hours => (hashtext(d.id::text || k.key) & 2147483647) % (k.days * 24))
from devices d
     cross join (values ('received', 90, 30), ('opened', 60, 60), ('clicked', 30, 60),
                        ('custom:purchase', 10, 365), ('custom:x', 20, 30)) k(key, pct, days)
where d.app_id = '$APP' and (hashtext(d.id::text || k.key) & 2147483647) % 100 < k.pct
on conflict do nothing;
vacuum analyze device_event_last;
SQL
  info "estimate: event rows loaded" "$($PG -Atc "select count(*) from device_event_last") in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }') s"
  NAMES=("tag equality (tag.plan eq gold)" "platform + locale (ios and locale de)" "event.opened within_days 7"
         "nested any/all of five conditions" "custom_event.x not_exists")
  FILTERS=('{"field":"tag.plan","operator":"eq","value":"gold"}'
    '{"all":[{"field":"platform","operator":"eq","value":"ios"},{"field":"locale","operator":"eq","value":"de"}]}'
    '{"field":"event.opened","operator":"within_days","value":7}'
    '{"any":[{"all":[{"field":"tag.plan","operator":"eq","value":"platinum"},{"field":"platform","operator":"eq","value":"android"}]},{"all":[{"field":"locale","operator":"in","value":["fr","es"]},{"field":"app_version","operator":"gte","value":"3.2"},{"field":"event.clicked","operator":"within_days","value":30}]}]}'
    '{"field":"custom_event.x","operator":"not_exists"}')
  for i in "${!FILTERS[@]}"; do
    : >"$DATA/est.times"
    for r in $(seq 0 "${SCALE_ESTIMATE_RUNS:-10}"); do
      t=$(curl -s -o "$DATA/est.json" -w '%{http_code} %{time_total}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        -d "{\"filter\":${FILTERS[$i]}}" "$BASE/v1/segments/estimate")
      [ "${t%% *}" = 200 ] || { echo "  estimate answered ${t%% *}: $(head -c 300 "$DATA/est.json")"; }
      [ "$r" = 0 ] && first=${t#* } || echo "${t#* }" >>"$DATA/est.times"
    done
    count=$(grep -o '[0-9]*' "$DATA/est.json" | head -n 1)
    p99=$(pct 99 <"$DATA/est.times"); med=$(pct 50 <"$DATA/est.times")
    verdict "estimate at $DEVICES: ${NAMES[$i]}" "p99 ${p99} s (median $med, first $first; $count)" "< 2 s" "$(lt "$(awk -v a="$p99" -v b="$first" 'BEGIN { print (a > b) ? a : b }')" 2)"
  done
fi

# ---------------------------------------------------------------- registration
if part registration; then
  echo "registration: wrk, concurrency 64, ${SCALE_REG_SECONDS:-30} s after a ${SCALE_REG_WARMUP:-10} s warm-up, on the $DEVICES-device table ..."
  PUSH_KEY=$PUBLIC_KEY REPEAT_PERCENT=50 wrk -t2 -c64 -d"${SCALE_REG_WARMUP:-10}s" -s "$ROOT/bench/registration.lua" "$BASE" >/dev/null
  PGPID=$(head -n 1 "$($PG -Atc 'show data_directory')/postmaster.pid" 2>/dev/null || true)
  s0=$(cpu_ticks "${PIDS[main]}"); p0=$(cpu_ticks "${PGPID:-0}")
  PUSH_KEY=$PUBLIC_KEY REPEAT_PERCENT=50 wrk -t2 -c64 -d"${SCALE_REG_SECONDS:-30}s" --timeout 10s -s "$ROOT/bench/registration.lua" "$BASE" >"$DATA/registration.out"
  s1=$(cpu_ticks "${PIDS[main]}"); p1=$(cpu_ticks "${PGPID:-0}")
  rps=$(awk '/^requests\/s/ { print $2 }' "$DATA/registration.out")
  REF=${SCALE_REG_REF:-858}
  verdict "registrations/s with $DEVICES devices (c64)" "$rps/s, p99 $(p99_of "$DATA/registration.out") ms, $(errors_of "$DATA/registration.out") errors" ">= $REF/s (e029d80, SCALE_REG_REF)" "$(ge "$rps" "$REF")"
  info "  registration CPU (PostgreSQL: every backend, other users' too)" "$(cpu_report registration "$(count_of "$DATA/registration.out")" "$s0" "$s1" "$p0" "$p1")"
fi

# ---------------------------------------------------------------- storage
if part storage; then
  # sizes over a partitioned table's leaves too
  size_of() {
    $PG -Atc "select case when exists (select 1 from pg_partitioned_table where partrelid = '$1'::regclass)
                          then (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree('$1'))
                          else pg_total_relation_size('$1') end"
  }
  rows=$($PG -Atc "select count(*) from notification_recipients")
  bytes=$(size_of notification_recipients)
  info "storage: notification_recipients" "$rows rows, $(mib "$bytes"): $(awk -v b="$bytes" -v n="$rows" 'BEGIN { printf "%.0f", n ? b / n : 0 }') bytes per row with indexes"
  # V58: handed recipients accepted at their first attempt are stored per batch, not per row
  if [ "$($PG -Atc "select to_regclass('notification_recipient_batches') is not null")" = t ]; then
    members=$($PG -Atc "select coalesce(sum(cardinality(device_ids)), 0) from notification_recipient_batches")
    bbytes=$(size_of notification_recipient_batches)
    info "storage: notification_recipient_batches" "$members recipients in $($PG -Atc "select count(*) from notification_recipient_batches") batches, $(mib "$bbytes"): $(awk -v b="$bbytes" -v n="$members" 'BEGIN { printf "%.0f", n ? b / n : 0 }') bytes per recipient with indexes"
  fi
  $PG -Atc "select id from devices where app_id = '$APP' order by created_at limit 1000" >"$DATA/devices.txt"
  PUSH_KEY=$PUBLIC_KEY DEVICE_FILE="$DATA/devices.txt" wrk -t1 -c8 -d10s --timeout 10s -s "$ROOT/bench/events.lua" "$BASE" >"$DATA/events.out"
  sleep 2
  rows=$($PG -Atc "select count(*) from events")
  bytes=$(size_of events)
  info "storage: events (10 s of POST /v1/events, c8)" "$rows rows, $(mib "$bytes"): $(awk -v b="$bytes" -v n="$rows" 'BEGIN { printf "%.0f", n ? b / n : 0 }') bytes per row with indexes ($(awk '/^events\/s/ { print $2 }' "$DATA/events.out") events/s)"
  if [ "$($PG -Atc "select count(*) from pg_partitioned_table where partrelid = 'notification_recipients'::regclass")" = 1 ]; then
    leaf=$($PG -Atc "select relid::regclass from pg_partition_tree('notification_recipients') where isleaf order by pg_total_relation_size(relid) desc limit 1")
    lb=$($PG -Atc "select pg_total_relation_size('$leaf')")
    # retention's own drop (storage_drop_partition, branch partitions) where the schema has it
    how="detach + drop"
    drop=(-c "alter table notification_recipients detach partition $leaf" -c "drop table $leaf")
    if [ "$($PG -Atc "select count(*) from pg_proc where proname = 'storage_drop_partition'")" -gt 0 ]; then
      how="storage_drop_partition"; drop=(-c "select storage_drop_partition('$leaf')")
    fi
    t0=$(date +%s%3N)
    if $PG "${drop[@]}" >/dev/null; then
      info "storage: dropping the largest recipients partition" "$leaf ($(mib "$lb")): $how $(( $(date +%s%3N) - t0 )) ms"
    else
      info "storage: dropping the largest recipients partition" "$leaf: $how failed (above)"
    fi
  else
    info "storage: dropping a day's partition" "skipped: notification_recipients is not partitioned on this commit"
  fi
fi

echo
echo "summary ($DEVICES devices, commit $COMMIT as built at the start, load average now $(loadavg)):"
cat "$RESULTS"
