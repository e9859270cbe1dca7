#!/usr/bin/env bash
# Raw FCM provider throughput: FcmProvider -> the local HTTP/2 FCM v1 peer on loopback (same JVM),
# at the given numbers of requests in flight. Prints sends/s; asserts nothing.
#   bench/fcm.sh [messages=100000] [in-flight...=100 1000]
source "$(dirname "$0")/lib.sh"
run_test_main dev.pushservice.bench.FcmBench "$@"
