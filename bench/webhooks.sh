#!/usr/bin/env bash
# Webhook delivery burst: EVENTS custom events for 3 webhook endpoints (one local receiver, three
# paths) are recorded while no worker runs (PUSH_ROLES=api,scheduler), then the service restarts
# with the worker role and delivers the whole burst: relay (lifecycle_events -> webhook_deliveries),
# claim, sign, send, record. Prints the deliveries/s the receiver saw from the first to the last and
# the CPU per delivery of the service and its PostgreSQL.
# Usage: [PUSH_WEBHOOKS_PER_ENDPOINT_CONCURRENCY=8] bench/webhooks.sh [events=10000]
source "$(dirname "$0")/lib.sh"
EVENTS=${1:-10000}
PORT=${PORT:-18093}
RECEIVER_PORT=${RECEIVER_PORT:-18094}
DATA=$(mktemp -d /tmp/push-bench-webhooks.XXXXXX)
RECEIVER_PID=
trap 'stop_service; [ -n "$RECEIVER_PID" ] && kill "$RECEIVER_PID" 2>/dev/null; rm -rf "$DATA"' EXIT

build_jar
(cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
  && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
JAVA=$(find_java)
LIMITS=(PUSH_RATE_LIMIT_APP_PER_SECOND=1000000 PUSH_RATE_LIMIT_ORG_PER_SECOND=1000000
        PUSH_RATE_LIMIT_APP_BURST=1000000 PUSH_RATE_LIMIT_ORG_BURST=1000000 PUSH_WEBHOOKS_ALLOW_INSECURE=true
        ${PUSH_WEBHOOKS_PER_ENDPOINT_CONCURRENCY:+PUSH_WEBHOOKS_PER_ENDPOINT_CONCURRENCY=$PUSH_WEBHOOKS_PER_ENDPOINT_CONCURRENCY})

echo "recording $EVENTS events for 3 endpoints (no worker running) ..."
start_service "$PORT" "$DATA" PUSH_ROLES=api,scheduler "${LIMITS[@]}"
SERVER=$(bootstrap_key "$DATA" server)
PUBLIC=$(bootstrap_key "$DATA" public)
for path in a b c; do
  curl -fs -o /dev/null -X POST "http://127.0.0.1:$PORT/v1/webhooks" -H "Authorization: Bearer $SERVER" \
    -H 'Content-Type: application/json' \
    -d '{"url":"http://127.0.0.1:'"$RECEIVER_PORT"'/'"$path"'","events":["event.custom"]}'
done
python3 - "$PORT" "$PUBLIC" "$EVENTS" <<'PY'
import http.client, sys, threading
port, key, total = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
body = b'{"event_type":"custom","event_name":"bench"}'
def worker(n):
    c = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(n):
        c.request("POST", "/v1/events", body, {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        if r.status != 202: raise SystemExit("event refused: %d" % r.status)
threads = [threading.Thread(target=worker, args=(total // 16 + (1 if i < total % 16 else 0),)) for i in range(16)]
[t.start() for t in threads]; [t.join() for t in threads]
PY
sleep 2 # the event writer commits in batches
stop_service

"$JAVA" -cp "$ROOT/target/test-classes" dev.pushservice.bench.WebhookReceiver "$RECEIVER_PORT" $((EVENTS * 3)) 300 &
RECEIVER_PID=$!
sleep 1
echo "starting the worker role: delivering the burst ..."
start_service "$PORT" "$DATA" PUSH_ROLES=api,worker,scheduler "${LIMITS[@]}"
PG=$(postmaster_pid "$DATA")
S0=$(cpu_ticks "$SERVICE_PID"); P0=$(cpu_ticks "$PG")
wait "$RECEIVER_PID" || true
RECEIVER_PID=
S1=$(cpu_ticks "$SERVICE_PID"); P1=$(cpu_ticks "$PG")
cpu_report "delivery (start-up included)" $((EVENTS * 3)) "$S0" "$S1" "$P0" "$P1"
