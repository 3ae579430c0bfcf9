#!/usr/bin/env bash
# Fault detection latency: injected fault -> node state change, at the default 1 s
# interval and the default controller health config.
#
#   bench/detection/run.sh [--storms N] [--kills N] [--out FILE]
#
# Builds optimized (-c opt, symlinks under /tmp/weft-opt-), then runs
# bench/detection/detection_bench.py: one real weft-controller with
# deploy/examples/controller.yaml (the built-in defaults), N agents whose simulated
# PFC storm starts at a logged time (--fault_delay_ms), and N agents that are
# SIGKILLed at recorded times. Latencies come from the controller's event log. Prints
# a markdown section (about 30 s).
set -euo pipefail
cd "$(dirname "$0")/../.."

storms=20
kills=20
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --storms) storms="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--storms N] [--kills N] [--out FILE]" >&2; exit 2 ;;
  esac
done

prefix=/tmp/weft-opt-
bazel build -c opt --symlink_prefix="$prefix" //controller:weft-controller //agent:weft-agent \
  //cli:weftctl >/dev/null 2>&1 || {
  echo "build failed; run: bazel build -c opt --symlink_prefix=$prefix //agent:weft-agent" >&2
  exit 1
}
args=(--bin "${prefix}bin" --config deploy/examples/controller.yaml --storms "$storms"
      --kills "$kills")
[ -n "$out" ] && args+=(--out "$out")
exec python3 bench/detection/detection_bench.py "${args[@]}"
