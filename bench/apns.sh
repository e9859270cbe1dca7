#!/usr/bin/env bash
# Raw APNs provider throughput: ApnsProvider -> Pushy's MockApnsServer over TLS on loopback,
# at 100 and 1,000 requests in flight. Prints sends/s; asserts nothing.
#   bench/apns.sh [sends] [connections...]     (default: 100000 1 2 4)
#   APNS_BENCH_RAW=1 also runs Pushy alone with the same settings, for comparison.
source "$(dirname "$0")/lib.sh"
run_test_main dev.pushservice.bench.ApnsBench "$@"
