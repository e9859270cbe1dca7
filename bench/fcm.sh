#!/usr/bin/env bash
# Raw FCM provider throughput: FcmProvider -> local HTTP/2 FCM v1 peer (same JVM, loopback).
# Usage: bench/fcm.sh [messages-per-run] [concurrency ...]   (default: 100000 100 1000)
# Prints sends/s; asserts nothing. Works from a fresh clone (builds test classes first).
set -euo pipefail
cd "$(dirname "$0")/.."

./mvnw -q -DskipTests test-compile
./mvnw -q dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench-classpath.txt >/dev/null

java_ok() { "$1" -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); exit !(v[1] >= 21) }'; }
JAVA=""
for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && java_ok "$candidate"; then JAVA="$candidate"; break; fi
done
[ -n "$JAVA" ] || { echo "need a JDK 21 or newer (set JAVA_HOME)" >&2; exit 1; }

exec "$JAVA" -Xms1g -Xmx1g -cp "target/classes:target/test-classes:$(cat target/bench-classpath.txt)" \
  dev.pushservice.bench.FcmBench "$@"
