#!/usr/bin/env bash
# Starts the local APNs, FCM v1 (+ OAuth) and Web Push peers, prints how to point the service at
# them, writes ready-made credentials, and counts what they receive. Ctrl-C stops them.
#   bench/peers.sh [directory for the generated files]
source "$(dirname "$0")/lib.sh"
run_test_main dev.pushservice.peers.LocalPeers "$@"
