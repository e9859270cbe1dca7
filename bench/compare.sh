#!/usr/bin/env bash
# Fan-out CPU per recipient of this checkout beside another commit's, back to back on this machine: builds
# COMMIT's jar in a temporary worktree, then runs bench/fanout.sh (this checkout's script and peers) PAIRS times
# for each jar, alternating which goes first, with random device ids on both sides (ids as a checkout makes them
# would differ between commits), BENCH_WARMUP=2 unless set, and CPU by thread group (BENCH_THREADS). Prints each
# run's rate and CPU per recipient (service, PostgreSQL, the JIT compilers apart), then the means and their ratio.
# Asserts nothing. Single runs of the same jar differ by up to a third (an autovacuum or a checkpoint in the
# window), so compare means of several pairs, at sizes where start-up and the JIT no longer weigh (1,000,000).
#   bench/compare.sh COMMIT [devices=1000000] [pairs=2] [mix=ios]
# Other fanout.sh settings (BENCH_PGSS, BENCH_KEEP, PORT ...) pass through to every run.
source "$(dirname "$0")/lib.sh"
unset BENCH_JAR # each run names its own jar; this checkout's is built below
BASE=${1:?usage: bench/compare.sh COMMIT [devices] [pairs] [mix]}
DEVICES=${2:-1000000}
PAIRS=${3:-2}
MIX=${4:-ios}
BASE_SHA=$(git -C "$ROOT" rev-parse --verify "$BASE^{commit}") || exit 1
HEAD_SHA=$(git -C "$ROOT" rev-parse --short HEAD)
WORK=$(mktemp -d /tmp/push-bench-compare.XXXXXX)
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/base" >/dev/null 2>&1 || true
  echo "each run's log: $WORK"
}
trap cleanup EXIT

echo "building ${BASE_SHA:0:7}'s jar in a worktree ..."
git -C "$ROOT" worktree add -f --detach "$WORK/base" "$BASE_SHA" >/dev/null
(cd "$WORK/base" && ./mvnw -q -B -ntp -DskipTests package) || { echo "could not build ${BASE_SHA:0:7}" >&2; exit 1; }
build_jar
cp "$ROOT/target/push-service.jar" "$WORK/head.jar" # a rebuild of this checkout during the runs changes nothing here

# one run of fanout.sh on jar $2: prints its rate and CPU per recipient, adds "label service pg jit" to $WORK/figures,
# keeps its log in $WORK
run() {
  local label=$1 jar=$2 log=$WORK/$1-$3.log
  BENCH_JAR=$jar BENCH_DEVICE_IDS=random BENCH_WARMUP=${BENCH_WARMUP:-2} BENCH_THREADS=1 \
    "$ROOT/bench/fanout.sh" "$DEVICES" "$MIX" >"$log" 2>&1 || { echo "run $label $3 failed; its log:" >&2; tail -20 "$log" >&2; exit 1; }
  local rate service pg jit
  rate=$(sed -n 's/^bulk: .*: \([0-9]*\) recipients\/s.*/\1/p' "$log" | tail -1)
  service=$(sed -n 's/^CPU per recipient: service \([0-9.]*\) µs, PostgreSQL.*/\1/p' "$log" | tail -1)
  pg=$(sed -n 's/^CPU per recipient: service [0-9.]* µs, PostgreSQL \([0-9.]*\) µs.*/\1/p' "$log" | tail -1)
  jit=$(awk '/by thread group/ {t=1; next} t && /CompilerThre/ {s += $1} END {printf "%.1f", s}' "$log")
  [ -n "$rate" ] && [ -n "$service" ] && [ -n "$pg" ] || { echo "run $label $3: no figures in $log" >&2; exit 1; }
  printf '%-9s pair %d: %6d recipients/s, service %4s + PostgreSQL %4s = %3d µs per recipient (JIT %s of the service)\n' \
    "$label" "$3" "$rate" "$service" "$pg" "$(awk -v a="$service" -v b="$pg" 'BEGIN {printf "%d", a + b}')" "$jit"
  echo "$label $service $pg $jit" >>"$WORK/figures"
}

echo "$PAIRS pair(s) of bench/fanout.sh $DEVICES $MIX: $HEAD_SHA (this checkout) and ${BASE_SHA:0:7}, alternating"
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then
    run base "$WORK/base/target/push-service.jar" "$i"; run head "$WORK/head.jar" "$i"
  else
    run head "$WORK/head.jar" "$i"; run base "$WORK/base/target/push-service.jar" "$i"
  fi
done
awk -v head="$HEAD_SHA" -v base="${BASE_SHA:0:7}" '
  { s[$1] += $2; p[$1] += $3; j[$1] += $4; n[$1]++ }
  END {
    for (k in n) { s[k] /= n[k]; p[k] /= n[k]; j[k] /= n[k] }
    printf "means: %s service %.1f + PostgreSQL %.1f = %.1f µs (JIT %.1f); %s service %.1f + PostgreSQL %.1f = %.1f µs (JIT %.1f)\n",
      head, s["head"], p["head"], s["head"] + p["head"], j["head"], base, s["base"], p["base"], s["base"] + p["base"], j["base"]
    printf "%s / %s: %.0f%% (service %.0f%%, PostgreSQL %.0f%%)\n", head, base,
      100 * (s["head"] + p["head"]) / (s["base"] + p["base"]), 100 * s["head"] / s["base"], 100 * p["head"] / p["base"]
  }' "$WORK/figures"
