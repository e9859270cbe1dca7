#!/usr/bin/env bash
# Raw APNs provider throughput: ApnsProvider -> Pushy's MockApnsServer over TLS on loopback,
# at 100 and 1,000 requests in flight. Prints sends/s; asserts nothing.
#   bench/providers/apns.sh [sends] [connections...]     (default: 100000 1 2 4)
#   APNS_BENCH_RAW=1 also runs Pushy alone with the same settings, for comparison.
# Maven compiles the test classes and runs them on the JDK 21+ toolchain it selects.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec ./mvnw -q test-compile exec:exec -Dexec.executable=java -Dexec.classpathScope=test \
  "-Dexec.args=-Xms512m -Xmx2g -cp %classpath dev.pushservice.bench.ApnsBench $*"
