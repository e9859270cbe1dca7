#!/usr/bin/env bash
# Migration upload benchmark (issue 27 part 3): the service (heap capped with -Xmx, default 256m) on
# its embedded PostgreSQL; an owner made by the admin CLI signs in to the dashboard (curl with a
# cookie jar and the pages' CSRF tokens) and uploads a generated CSV of ROWS rows (default
# 1,000,000; template columns, 60% iOS / 40% Android, 2% unsubscribed, 1% invalid tokens, tags on a
# third) through POST /dashboard/apps/{app}/migration, as a browser's form does (multipart).
# Prints the file's size, wall time of the upload (request sent to page received), rows/s, what the
# page reports staged and skipped, and the service's heap (Prometheus jvm_memory_used_bytes, heap,
# sampled every 0.25 s): before, largest seen during the upload, and after.
# Usage: bench/migration.sh [rows]. BENCH_HEAP=512m changes the cap.
source "$(dirname "$0")/lib.sh"
ROWS=${1:-1000000}
PORT=${PORT:-18193}
HEAP=${BENCH_HEAP:-256m}
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then echo "port $PORT is in use; set PORT" >&2; exit 1; fi
DATA=$(mktemp -d /tmp/push-bench-migration.XXXXXX)
trap 'stop_service; stop_postgres "$DATA"; rm -rf "$DATA"' EXIT
command -v psql >/dev/null || { echo "psql is needed (apt-get install postgresql-client)" >&2; exit 1; }
BASE="http://127.0.0.1:$PORT"

echo "generating $ROWS rows ..."
CSV="$DATA/devices.csv"
awk -v n="$ROWS" 'BEGIN {
  srand(42);
  printf "source_device_id,push_token,platform,external_user_id,subscribed,app_version,device_model,os_version,locale,timezone,tags_json\r\n";
  for (i = 1; i <= n; i++) {
    ios = (i % 5) < 3;
    if (ios) {
      tok = sprintf("%08x%08x%08x%08x%08x%08x%08x%08x", i, int(rand() * 4294967295), int(rand() * 4294967295), int(rand() * 4294967295),
                    int(rand() * 4294967295), int(rand() * 4294967295), int(rand() * 4294967295), int(rand() * 4294967295));
      if (i % 100 == 7) tok = "not-hex-" i;
    } else {
      tok = sprintf("fcm-bench-%d:%08x%08x%08x", i, int(rand() * 4294967295), int(rand() * 4294967295), int(rand() * 4294967295));
    }
    src = (i % 2) ? sprintf("%08x-%04x-4%03x-8%03x-%012x", int(rand() * 4294967295), i % 65536, i % 4096, int(rand() * 4096), i) : "legacy-" i;
    subs = (i % 50 == 3) ? "false" : "true";
    tags = (i % 3 == 0) ? sprintf("\"{\"\"plan\"\":\"\"p%d\"\",\"\"score\"\":%d}\"", i % 7, i % 1000) : "";
    printf "%s,%s,%s,user-%d,%s,3.%d.0,%s,%s,%s,%s,%s\r\n", src, tok, ios ? "ios" : "android", i % 400000, subs, i % 20,
           ios ? "\"iPhone14,2\"" : "Pixel 8", ios ? "17.4" : "14", (i % 4) ? "en-US" : "de-DE", (i % 10 == 1) ? "+02:00" : "Europe/Berlin", tags;
  }
}' > "$CSV"
SIZE=$(stat -c %s "$CSV")

build_jar
start_service "$PORT" "$DATA" JAVA_TOOL_OPTIONS="-Xmx$HEAP"
bootstrap_key "$DATA" server >/dev/null
PG="psql -X -q -h 127.0.0.1 -p $(cat "$DATA/postgres.port") -U postgres -d postgres"
APP=$($PG -Atc "select id from apps limit 1")
ORG=$($PG -Atc "select org_id from apps where id = '$APP'")
JAVA=$(find_java)
LINK=$(PUSH_DATA_DIR="$DATA" PORT="$PORT" JAVA_TOOL_OPTIONS= "$JAVA" -jar "$ROOT/target/push-service.jar" admin member add \
  --org "$ORG" --email bench-owner@example.com --role owner --json 2>/dev/null | grep -o '"sign_in_link" *: *"[^"]*"' | cut -d'"' -f4)
[ -n "$LINK" ] || { echo "admin member add printed no link" >&2; exit 1; }
TOKEN=${LINK##*token=}
JAR="$DATA/cookies"
csrf() { grep -o 'name="_csrf" value="[^"]*"' | head -n 1 | cut -d'"' -f4; }
PASSWORD='bench password 12345'
T=$(curl -s -c "$JAR" -b "$JAR" "$BASE/dashboard/join?token=$TOKEN" | csrf)
curl -s -o /dev/null -c "$JAR" -b "$JAR" --data-urlencode "token=$TOKEN" --data-urlencode "_csrf=$T" \
  --data-urlencode "email=bench-owner@example.com" --data-urlencode "password=$PASSWORD" \
  --data-urlencode "password_confirmation=$PASSWORD" "$BASE/dashboard/join"
T=$(curl -s -c "$JAR" -b "$JAR" "$BASE/dashboard/sign-in" | csrf)
code=$(curl -s -o /dev/null -w '%{http_code}' -c "$JAR" -b "$JAR" --data-urlencode "email=bench-owner@example.com" \
  --data-urlencode "password=$PASSWORD" --data-urlencode "_csrf=$T" "$BASE/dashboard/sign-in")
[ "$code" = 302 ] || { echo "sign-in answered $code" >&2; exit 1; }
PAGE="$BASE/dashboard/apps/$APP/migration"
T=$(curl -s -c "$JAR" -b "$JAR" "$PAGE" | csrf)
[ -n "$T" ] || { echo "the migration page has no form" >&2; exit 1; }

heap() {
  curl -s "$BASE/actuator/prometheus" | awk '/^jvm_memory_used_bytes\{.*area="heap"/ { s += $NF } END { printf "%d", s }'
}
# a warm-up upload of 20,000 rows (JIT, connections), then the measured one
head -n 20001 "$CSV" | sed 's/^\([^,]*\),/warm-\1,/' | sed '1s/^warm-//' > "$DATA/warm.csv"
curl -s -o /dev/null -c "$JAR" -b "$JAR" -F "_csrf=$T" -F provider=warmup -F "file=@$DATA/warm.csv;type=text/csv" "$PAGE" || true
$PG -c "delete from migration_staged_devices" -c "vacuum analyze migration_staged_devices"
T=$(curl -s -c "$JAR" -b "$JAR" "$PAGE" | csrf)
sleep 2
before=$(heap)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
( max=0; while :; do h=$(heap); [ "${h:-0}" -gt "$max" ] && { max=$h; echo "$max" > "$DATA/heap.max"; }; sleep 0.25; done ) &
SAMPLER=$!
PGPID=$(postmaster_pid "$DATA")
s0=$(cpu_ticks "$SERVICE_PID"); p0=$(cpu_ticks "$PGPID")
start=$(date +%s.%N)
code=$(curl -s -o "$DATA/page.html" -w '%{http_code}' -c "$JAR" -b "$JAR" -F "_csrf=$T" -F provider=onesignal \
  -F "file=@$CSV;type=text/csv" "$PAGE" || echo "curl failed $?")
end=$(date +%s.%N)
s1=$(cpu_ticks "$SERVICE_PID"); p1=$(cpu_ticks "$PGPID")
kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null || true
sleep 2
after=$(heap)
[ "$code" = 200 ] || { echo "upload answered $code:"; sed -n '/<main/,/<\/main>/p' "$DATA/page.html" | head -40; exit 1; }
staged=$(grep -o 'id="rows-staged">[0-9,]*' "$DATA/page.html" | cut -d'>' -f2 || true)
skipped=$(grep -o 'id="rows-skipped">[0-9,]*' "$DATA/page.html" | cut -d'>' -f2 || true)
reasons=$(tr -d '\n' < "$DATA/page.html" | grep -o '<td>[a-z_]*</td><td class="num">[0-9]*</td>' \
  | sed 's/<td>\([a-z_]*\)<\/td><td class="num">\([0-9]*\)<\/td>/\1 \2/' | paste -sd, - || true)
in_db=$($PG -Atc "select count(*) from migration_staged_devices where app_id = '$APP'")
secs=$(echo "$end - $start" | bc -l)
echo "load average before the upload: $LOAD"
printf 'file: %d rows, %.1f MiB\n' "$ROWS" "$(echo "$SIZE / 1048576" | bc -l)"
printf 'upload to page: %.2f s, %.0f rows/s; staged %s (in the table: %s), skipped %s (%s)\n' "$secs" \
  "$(echo "$ROWS / $secs" | bc -l)" "$staged" "$in_db" "$skipped" "$reasons"
printf 'heap (cap %s): before %d MiB, largest seen during the upload %d MiB, after %d MiB\n' "$HEAP" \
  $(( before / 1048576 )) $(( $(cat "$DATA/heap.max" 2>/dev/null || echo 0) / 1048576 )) $(( after / 1048576 ))
cpu_report row "$ROWS" "$s0" "$s1" "$p0" "$p1"
HZ=$(getconf CLK_TCK)
printf 'CPU during the upload: service %.1f s, PostgreSQL %.1f s\n' "$(echo "($s1 - $s0) / $HZ" | bc -l)" "$(echo "($p1 - $p0) / $HZ" | bc -l)"
grep "Migration upload" "$DATA/service.log" | tail -n 3 | sed 's/^.*DeviceMigration - /service: /; s/^.*MigrationController - /service: /' || true
