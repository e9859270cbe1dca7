#!/usr/bin/env bash
# Web Push raw provider benchmark: encryption cost per message and sends/s through the provider to
# a local Web Push receiver at 100 and 1,000 in flight. Prints figures; never asserts.
#   bench/webpush.sh [messages per level (default 20000)] [sender threads (default 4)]
source "$(dirname "$0")/lib.sh"
run_test_main dev.pushservice.bench.WebPushBench "$@"
