# Shared helpers for the benchmark scripts: find a JDK 21+, build the jar, start and stop the service.
# shellcheck shell=bash
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

find_java() {
  local candidates=("${JAVA_HOME:-}" /usr/lib/jvm/* /Library/Java/JavaVirtualMachines/*/Contents/Home)
  for home in "${candidates[@]}"; do
    [ -n "$home" ] && [ -x "$home/bin/java" ] || continue
    local v
    v=$("$home/bin/java" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')
    if [ "${v%%.*}" -ge 21 ] 2>/dev/null; then echo "$home/bin/java"; return; fi
  done
  echo "No JDK 21+ found; set JAVA_HOME" >&2; exit 1
}

# BENCH_JAR=/path/x.jar runs that jar instead of this checkout's (another commit's build: bench/compare.sh); nothing is built then
build_jar() {
  [ -n "${BENCH_JAR:-}" ] && { [ -f "$BENCH_JAR" ] || { echo "BENCH_JAR $BENCH_JAR does not exist" >&2; exit 1; }; return 0; }
  if [ ! -f "$ROOT/target/push-service.jar" ] || [ -n "$(find "$ROOT/src/main" -newer "$ROOT/target/push-service.jar" -print -quit)" ]; then
    echo "building target/push-service.jar ..."
    (cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests package)
  fi
}

need_wrk() {
  if ! command -v wrk >/dev/null; then
    echo "installing wrk (Debian package) ..."
    if [ "$(id -u)" = 0 ]; then apt-get install -y -qq wrk >/dev/null; else sudo apt-get install -y -qq wrk >/dev/null; fi
  fi
}

# start_service PORT DATA_DIR [extra env assignments...]: starts the jar on the embedded PostgreSQL, waits until it answers
# (at most BENCH_START_TIMEOUT seconds, default 120).
start_service() {
  local port=$1 data=$2; shift 2
  local java; java=$(find_java)
  mkdir -p "$data"
  env PORT="$port" PUSH_DATA_DIR="$data" PUSH_LOG_FORMAT=text "$@" \
    "$java" -jar "${BENCH_JAR:-$ROOT/target/push-service.jar}" >"$data/service.log" 2>&1 &
  SERVICE_PID=$!
  for _ in $(seq 1 "${BENCH_START_TIMEOUT:-120}"); do
    if curl -fs -o /dev/null "http://127.0.0.1:$port/openapi.yaml" || curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1" | grep -q 401; then
      return 0
    fi
    kill -0 "$SERVICE_PID" 2>/dev/null || { echo "service exited; see $data/service.log" >&2; tail -30 "$data/service.log" >&2; exit 1; }
    sleep 1
  done
  echo "service did not start within ${BENCH_START_TIMEOUT:-120} s (BENCH_START_TIMEOUT)" >&2; exit 1
}

stop_service() {
  [ -n "${SERVICE_PID:-}" ] && kill "$SERVICE_PID" 2>/dev/null && wait "$SERVICE_PID" 2>/dev/null || true
}

bootstrap_key() { # bootstrap_key DATA_DIR server|public
  local pattern=ps_live_; [ "$2" = public ] && pattern=ps_public_
  # the server answers HTTP a moment before the first-start bootstrap has written the file
  for _ in $(seq 1 30); do [ -s "$1/bootstrap-keys.txt" ] && break; sleep 1; done
  grep -o "${pattern}[A-Za-z0-9_-]*" "$1/bootstrap-keys.txt" | head -n 1
}

# run_test_main CLASS [args...]: compiles main and test classes and runs CLASS from the test
# classpath on a JDK 21+ (benchmarks of the providers, the local peers).
run_test_main() {
  local cls=$1; shift
  (cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests test-compile \
    && ./mvnw -q -B -ntp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt >/dev/null)
  local java; java=$(find_java)
  exec "$java" --enable-native-access=ALL-UNNAMED -Xms1g -Xmx2g \
    -cp "$ROOT/target/test-classes:$ROOT/target/classes:$(cat "$ROOT/target/test-classpath.txt")" "$cls" "$@"
}

# cpu_ticks PID...: user+system clock ticks used so far by these processes, their live children
# and their reaped children (PostgreSQL backends are children of the postmaster).
cpu_ticks() {
  local total=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    total=$((total + $(awk '{print $14+$15+$16+$17}' "/proc/$pid/stat")))
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
      [ -r "/proc/$child/stat" ] && total=$((total + $(awk '{print $14+$15}' "/proc/$child/stat")))
    done
  done
  echo "$total"
}

# thread_ticks PID: "name ticks" per thread of PID (user + system), the name with digits and
# trailing separators folded so pools group (e.g. "C2 CompilerThre", "ForkJoinPool-", "G Conc#").
thread_ticks() {
  local t
  for t in /proc/"$1"/task/*; do
    [ -r "$t/stat" ] || continue
    awk -v name="$(tr -d '0-9 ' <"$t/comm" 2>/dev/null)" '{ sub(/^[^)]*\) /, ""); print name, $12 + $13 }' "$t/stat" 2>/dev/null
  done
}

# thread_report BEFORE AFTER N LABEL: the service's CPU per LABEL by thread group between two
# thread_ticks snapshots (threads that ended in between are not counted), the busiest first.
thread_report() {
  local hz; hz=$(getconf CLK_TCK)
  echo "service CPU per $4 by thread group (BENCH_THREADS):"
  awk -v n="$3" -v hz="$hz" 'FNR == NR { a[$1] += $2; next } { b[$1] += $2 }
    END { for (k in b) { d = b[k] - a[k]; if (d > 0) printf "  %7.1f µs  %s\n", d / hz * 1e6 / n, k } }' \
    "$1" "$2" | sort -rn
}

# postmaster_pid DATA_DIR: the embedded PostgreSQL's postmaster (first line of postmaster.pid).
postmaster_pid() {
  head -n 1 "$1/postgres/postmaster.pid" 2>/dev/null || true
}

stop_postgres() { # stop_postgres DATA_DIR: stops the embedded PostgreSQL left by the service, after its shutdown checkpoint
  local pg; pg=$(postmaster_pid "$1"); [ -n "$pg" ] || return 0
  kill "$pg" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pg" 2>/dev/null || break; sleep 0.1; done
}

# cpu_report LABEL COUNT BEFORE_SERVICE AFTER_SERVICE BEFORE_PG AFTER_PG ["LOADGEN_USER_S LOADGEN_SYS_S"]:
# CPU per unit of work of the service, its PostgreSQL and (when given) the load generator.
cpu_report() {
  local hz; hz=$(getconf CLK_TCK)
  awk -v label="$1" -v n="$2" -v s=$(($4 - $3)) -v p=$(($6 - $5)) -v hz="$hz" -v gen="${7:-}" 'BEGIN {
    if (n <= 0) exit;
    line = sprintf("CPU per %s: service %.0f µs, PostgreSQL %.0f µs", label, s / hz * 1e6 / n, p / hz * 1e6 / n);
    if (split(gen, g, " ") == 2) line = line sprintf(", load generator %.0f µs", (g[1] + g[2]) * 1e6 / n);
    printf "%s (over %d)\n", line, n }'
}

# wrk_measured DATA_DIR PORT SCRIPT UNIT LABEL: wrk at concurrency 64 against the service started by
# start_service: a ${WARMUP}-second warm-up, then ${DURATION} seconds measured; prints the rate,
# latency, errors and the CPU per request of the service, its PostgreSQL and wrk. Pass the Lua
# script's settings through the environment (PUSH_KEY, ...). BENCH_THREADS=1 adds the service's CPU per
# request by thread group (request carriers, JIT compiler, GC, background loops).
wrk_measured() {
  local data=$1 port=$2 script=$3 unit=$4 label=$5
  echo "warm-up (${WARMUP}s: JIT compilation, connection pool, table growth) ..."
  wrk -t2 -c64 -d"${WARMUP}s" -s "$script" "http://127.0.0.1:$port" >/dev/null
  echo "measuring: ${DURATION}s, concurrency 64"
  local pg s0 s1 p0 p1
  pg=$(postmaster_pid "$data")
  [ -n "${BENCH_THREADS:-}" ] && thread_ticks "$SERVICE_PID" >"$data/threads.0"
  s0=$(cpu_ticks "$SERVICE_PID"); p0=$(cpu_ticks "$pg")
  local TIMEFORMAT='%U %S'
  { time wrk -t2 -c64 -d"${DURATION}s" --timeout 10s -s "$script" "http://127.0.0.1:$port" >"$data/wrk.out"; } 2>"$data/wrk.time"
  s1=$(cpu_ticks "$SERVICE_PID"); p1=$(cpu_ticks "$pg")
  [ -n "${BENCH_THREADS:-}" ] && thread_ticks "$SERVICE_PID" >"$data/threads.1"
  grep -E "$unit|latency p50|errors" "$data/wrk.out"
  cpu_report "$label" "$(awk '/^requests:/ {print $2}' "$data/wrk.out")" "$s0" "$s1" "$p0" "$p1" "$(cat "$data/wrk.time")"
  if [ -n "${BENCH_THREADS:-}" ]; then
    thread_report "$data/threads.0" "$data/threads.1" "$(awk '/^requests:/ {print $2}' "$data/wrk.out")" "$label"
  fi
}
