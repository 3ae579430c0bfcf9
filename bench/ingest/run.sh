#!/usr/bin/env bash
# Controller ingest: how many agents one weft-controller sustains on this machine.
#
#   bench/ingest/run.sh [--steps N,N,...] [--window_s S] [--settle_s S] [--nice N]
#                       [--out FILE]
#
# Builds optimized (-c opt, symlinks under /tmp/weft-opt-), starts one real
# weft-controller with its default configuration on free loopback ports, then runs
# bench/ingest:ingest_bench, one process that plays every agent: per node its own gRPC
# channel (own TCP connection), Register with 8 NICs and 8 GPUs, a Connect stream with
# the StreamHello, then one 8-sample TelemetryBatch per second, send times spread over
# the second. At each step of the ramp it measures over a steady window: controller CPU
# (utime+stime from /proc/<pid>/stat) and RSS, batches accepted
# (weft_controller_telemetry_batches_total) against batches due and sent, rejections,
# and the generator's own CPU. Then bench/ingest:inventory_bench times the controller's
# own logic (parse + Inventory::AcceptTelemetry per batch, Inventory::Sweep) without
# gRPC. Prints a markdown section (5-8 minutes).
#
# Both processes run at nice -10 by default (as root), so the other builds this shared
# machine runs do not starve the load generator; --nice 0 turns that off.
#
# System limits: every node holds one socket in each process, so the script raises the
# soft open-files limit to the hard limit (ulimit -n) and the generator stops the ramp
# before a step would exceed it. Ephemeral ports (net.ipv4.ip_local_port_range) bound
# the connections from one address to the controller's port; both are printed.
set -euo pipefail
cd "$(dirname "$0")/../.."

steps="1000,2500,5000,10000,12500,15000,17500"
window_s=20
settle_s=40
nice_level=-10
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --window_s) window_s="$2"; shift 2 ;;
    --settle_s) settle_s="$2"; shift 2 ;;
    --nice) nice_level="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--steps N,N,...] [--window_s S] [--settle_s S] [--nice N] [--out FILE]" >&2
       exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || [ "$nice_level" -ge 0 ] || nice_level=0

prefix=/tmp/weft-opt-
bazel build -c opt --symlink_prefix="$prefix" //controller:weft-controller \
  //bench/ingest:ingest_bench //bench/ingest:inventory_bench >/dev/null 2>&1 || {
  echo "build failed; run: bazel build -c opt --symlink_prefix=$prefix //bench/ingest:all" >&2
  exit 1
}
bin="${prefix}bin"
run() { nice -n "$nice_level" "$@"; }

ulimit -n "$(ulimit -Hn)"
nofile=$(ulimit -n)
port_range=$(tr '\t' '-' </proc/sys/net/ipv4/ip_local_port_range)

work=$(mktemp -d)
controller_pid=""
cleanup() {
  if [ -n "$controller_pid" ]; then
    kill "$controller_pid" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
grpc_port=$(free_port)
metrics_port=$(free_port)
# nice execs the controller, so $! is the controller's pid (/proc/<pid>/stat is its).
nice -n "$nice_level" "$bin/controller/weft-controller" --listen "127.0.0.1:$grpc_port" \
  --metrics "127.0.0.1:$metrics_port" --state_dir "$work/controller-state" \
  >"$work/controller.log" 2>&1 &
controller_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$metrics_port/metrics" >/dev/null 2>&1 && break
  sleep 0.1
done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)
run "$bin/bench/ingest/ingest_bench" --controller "127.0.0.1:$grpc_port" \
  --controller_pid "$controller_pid" --metrics "127.0.0.1:$metrics_port" \
  --steps "$steps" --window_s "$window_s" --settle_s "$settle_s" \
  >"$work/result.txt" 2>"$work/progress.txt" || {
  cat "$work/progress.txt" >&2
  exit 1
}
kill "$controller_pid" 2>/dev/null || true
wait "$controller_pid" 2>/dev/null || true
controller_pid=""
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

value() { sed -n "s/^$1=//p" "$2"; }
largest=$(value LARGEST_PASSING_NODES "$work/result.txt")
table=$(grep '^|' "$work/result.txt")
inventory_nodes=12500
run "$bin/bench/ingest/inventory_bench" --nodes "$inventory_nodes" >"$work/inventory.txt" 2>/dev/null
accept_us=$(value PARSE_AND_ACCEPT_US_PER_BATCH "$work/inventory.txt")
sweep_ms=$(value SWEEP_MS "$work/inventory.txt")
logic_cores=$(awk -v a="$accept_us" -v s="$sweep_ms" -v n="$inventory_nodes" \
  'BEGIN{printf "%.2f", (a * n / 1e6) + (s * 4 / 1000)}')
elapsed=$(( $(date +%s) - started ))

last_nodes=$(value LAST_STEP_NODES "$work/result.txt")
last_us=$(value LAST_STEP_US_PER_BATCH "$work/result.txt")
projected=$(awk -v u="${last_us:-0}" 'BEGIN{printf "%.2f", u * 12500 / 1e6}')
if [ "$largest" -ge 12500 ]; then
  verdict="**Largest step passed: ${largest} nodes** (target 12,500 nodes, a 100,000-GPU cluster: met)."
else
  verdict="**Largest step passed: ${largest} nodes** (target 12,500 nodes, a 100,000-GPU cluster: **not met** on this machine)."
fi
priority_note="both at nice ${nice_level} so the machine's other builds do not starve the generator"
[ "$nice_level" -eq 0 ] && priority_note="both at normal priority"

report=$(cat <<EOT
## Controller ingest

$(date -u +%Y-%m-%d), this machine ($(nproc) cores, shared with other builds: load average
${load_before} before, ${load_after} after), \`bench/ingest/run.sh\` (${elapsed} s).
One real \`weft-controller\` (default config: 1 s interval, 60-sample windows, health rules
on) and one load generator (\`bench/ingest:ingest_bench\`, gRPC callback API, 4 sender
threads) on loopback, ${priority_note}. Each simulated node has its own
channel and TCP connection, registers 8 NICs and 8 GPUs, opens a Connect stream and sends
one TelemetryBatch of 8 NIC samples per second (1.2 KiB on the wire; counters from the
simulated backend's model, advancing, rates_valid), send times spread evenly over the second.
Each step adds nodes (at most 256 connecting at once; "added in" is how long until all
stream), waits ${settle_s} s (NIC windows fill towards their 60 samples) and measures over
${window_s} s. Due = nodes × 1/s; controller CPU is utime+stime of its
process in cores, and per batch accepted; RSS per node is (RSS − idle RSS) / nodes;
machine busy is the CPU time of every process on the machine (/proc/*/stat, reaped children
included), out of $(nproc) cores. A step passes
with controller CPU < 1 core and accepted ≥ 99% of due; when it does not, the last column
says whether the controller fell behind (sent but not accepted, or rejected), the generator
did (not sent), and whether every core was busy at the time.

${table}

${verdict} At the last step (${last_nodes} nodes) the controller spent ${last_us} µs of CPU per
batch; 12,500 batches a second at that cost would be ${projected} cores (a floor: the cost per
batch grows slowly with the number of streams, see below). Idle controller RSS: $(value IDLE_RSS_MIB "$work/result.txt") MiB. Ramp ended: $(value STOPPED_BECAUSE "$work/result.txt").
Stream failures seen: $(value FAILURES "$work/result.txt"). Generator and controller share the
2 cores (and the other builds), so controller CPU is the number to compare across steps.

The controller's own logic, without gRPC (\`bench/ingest:inventory_bench\`, ${inventory_nodes} nodes,
every window full): parsing a batch into the stream's arena plus \`Inventory::AcceptTelemetry\`
takes ${accept_us} µs per batch, one \`Inventory::Sweep\` ${sweep_ms} ms; at ${inventory_nodes} nodes
that is ${logic_cores} cores (batches + 4 sweeps a second). The rest of the controller's CPU
is gRPC and the kernel: per batch a read, a WINDOW_UPDATE write back (gRPC 1.51 announces
stream and connection window after every message), a hand-off between gRPC's two polling
threads, and, because Debian builds gRPC without NDEBUG, a linear scan of the completion
queue's pending operations (two per open stream) on every completion, which grows with
the number of agents.

Limits: open files (ulimit -n) raised to the hard limit, ${nofile}, which caps a step at
about $(( nofile - 200 )) nodes (one socket per node in each process); ephemeral ports
${port_range} allow $(( ${port_range#*-} - ${port_range%-*} + 1 )) connections from 127.0.0.1 to
the controller's port.
EOT
)
echo "$report"
[ -n "$out" ] && echo "$report" >"$out"
exit 0
