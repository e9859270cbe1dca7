#!/usr/bin/env bash
# Web Push raw provider benchmark: encryption cost per message and sends/s through the provider to
# a local Web Push receiver at 100 and 1,000 in flight. Prints figures; never asserts.
# Usage: bench/webpush.sh [messages per level (default 20000)] [sender threads (default 4)]
set -euo pipefail
cd "$(dirname "$0")/.."

java_major() { "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'; }
find_java() {
  local candidates=()
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME/bin/java")
  command -v java >/dev/null && candidates+=("$(command -v java)")
  for d in /usr/lib/jvm/* /Library/Java/JavaVirtualMachines/*/Contents/Home; do
    [ -x "$d/bin/java" ] && candidates+=("$d/bin/java")
  done
  for j in "${candidates[@]}"; do
    local v; v=$(java_major "$j")
    if [ -n "$v" ] && [ "${v%%.*}" -ge 21 ]; then echo "$j"; return; fi
  done
  echo "no Java 21+ found (set JAVA_HOME)" >&2; exit 1
}

./mvnw -q -DskipTests test-compile
./mvnw -q dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/bench-classpath.txt >/dev/null
JAVA=$(find_java)
exec "$JAVA" --enable-native-access=ALL-UNNAMED -Xms1g -Xmx1g \
  -cp "target/test-classes:target/classes:$(cat target/bench-classpath.txt)" \
  dev.pushservice.bench.WebPushBench "$@"
