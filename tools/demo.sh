#!/usr/bin/env bash
# The local demo: one weft-controller and a simulated RoCE cluster of 4 racks x 8 nodes
# x 8 NICs (32 weft-agent processes) on loopback, all on the embedded defaults. One node
# (gpu-b03) has an injected PFC pause storm. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=bazel-bin
demo_dir=.demo
controller_addr=127.0.0.1:7400
metrics_addr=127.0.0.1:7401
racks=(a b c d)
nodes_per_rack=8
faulty=gpu-b03

mkdir -p "$demo_dir/logs"
pids=()

stop_all() {
  trap - INT TERM EXIT
  if [ ${#pids[@]} -gt 0 ]; then
    echo
    echo "weft demo: stopping ${#pids[@]} processes..."
    kill -TERM "${pids[@]}" 2>/dev/null || true
    # Give them a moment to exit cleanly, then make sure nothing is left behind.
    for _ in $(seq 50); do
      alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      [ $alive -eq 0 ] && break
      sleep 0.1
    done
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    echo "weft demo: stopped."
  fi
}
trap stop_all INT TERM EXIT

for port in 7400 7401; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "weft demo: port $port is already in use (another weft-controller?). Stop it first." >&2
    exit 1
  fi
done

# Plaintext gRPC, said out loud: the demo runs on loopback without certificates. Real
# deployments use mTLS (deploy/examples/*.yaml, deploy/pki/mint-dev-pki.sh).
echo "weft demo: gRPC is PLAINTEXT (--insecure), no TLS, no roles: for this loopback demo only"
# Durable state (nodes, drains, reservations, events, audit) survives demo restarts;
# rm -rf .demo/state to start empty.
"$bin/controller/weft-controller" --insecure --state_dir "$demo_dir/state" \
  >"$demo_dir/logs/controller.log" 2>&1 &
pids+=($!)

i=0
for rack in "${racks[@]}"; do
  pod=pod-1
  [[ "$rack" == c || "$rack" == d ]] && pod=pod-2
  for n in $(seq 1 $nodes_per_rack); do
    node=$(printf "gpu-%s%02d" "$rack" "$n")
    args=(--insecure --node "$node" --rack "rack-$rack" --pod "$pod" --controller "$controller_addr"
          --metrics "127.0.0.1:$((7500 + i))" --health "127.0.0.1:$((7600 + i))")
    [ "$node" == "$faulty" ] && args+=(--fault pfc_storm)
    "$bin/agent/weft-agent" "${args[@]}" >"$demo_dir/logs/$node.log" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
done
total=$i

echo "weft demo: controller on $controller_addr, $total simulated nodes starting (logs in $demo_dir/logs/)"
for _ in $(seq 100); do
  up=$("$bin/cli/weftctl" --controller "$controller_addr" nodes --output json 2>/dev/null |
       grep -c '"state": "NODE_STATE_HEALTHY"' || true)
  [ "$up" -ge "$total" ] && break
  sleep 0.2
done
sleep 2  # two telemetry intervals, so the table shows rates
"$bin/cli/weftctl" --controller "$controller_addr" nodes || true

cat <<EOT

Weft demo is running: 1 controller, $total agents (4 racks x 8 nodes x 8 NICs).
$faulty has an injected PFC pause storm on mlx5_0 (see its PFC_RX_PAUSED and PFC_TX_PAUSED).

Look at it:
  $bin/cli/weftctl nodes                          all nodes, state and rates
  $bin/cli/weftctl node $faulty                   one node's NICs and GPUs
  $bin/cli/weftctl drain gpu-a01 --reason "demo"  drain a node; undrain it with 'undrain'
  $bin/cli/weftctl nodes --output json            the same, for scripts
  curl -s http://$metrics_addr/metrics             controller metrics (Prometheus)
  curl -s http://127.0.0.1:7500/metrics            gpu-a01's agent metrics
  kill \$(pgrep -f 'weft-agent --node gpu-c05')   a node that stops reporting is DOWN after 3 s

Press Ctrl-C to stop everything.
EOT
wait "${pids[0]}"
