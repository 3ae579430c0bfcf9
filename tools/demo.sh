#!/usr/bin/env bash
# The local demo: the fabric twin (weft-fabric: 4 racks x 8 nodes x 8 NICs of 400 Gb/s on a
# 2:1 leaf-spine), one weft-controller with automatic drain on, 32 weft-agents reading
# their NICs from the twin, and four training jobs placed through the controller's
# PlacementService by the twin's job generator (deploy/examples/fabric.yaml), all on
# loopback with the embedded defaults. After the jobs settle, one NIC of a job's node
# storms PFC pauses: the job slows, the controller flags the node and drains it, the job
# is placed again and recovers. Ctrl-C stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=bazel-bin
demo_dir=.demo
controller_addr=127.0.0.1:7400
metrics_addr=127.0.0.1:7401
fabric_addr=127.0.0.1:7300
racks=(a b c d)
nodes_per_rack=8
weftctl=("$bin/cli/weftctl" --controller "$controller_addr" --fabric "$fabric_addr")

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

for port in 7300 7400 7401; do
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
# The demo drains a node 10 s after it turns sick (the default is off: an operator
# chooses), and gives it back after 60 s clean.
# Pingmesh probes for real over loopback UDP (below); 32 agents share this machine's
# cores, so each node sends at most 200 probes/s instead of the default 1,000, and its
# verdicts stay events and metrics: on a machine this loaded a node's host delay jumps
# to milliseconds now and then, which pingmesh rightly calls a slow host, and the
# demo's auto-drain would take a random node out of the story.
cat >"$demo_dir/controller.yaml" <<'EOT'
health:
  auto_drain:
    enabled: true
    after_ms: 10000
    undrain_after_clean_ms: 60000
pingmesh:
  max_probes_per_node_per_s: 200
  degrade_blamed_nodes: false
EOT
"$bin/controller/weft-controller" --insecure --config "$demo_dir/controller.yaml" \
  --state_dir "$demo_dir/state" >"$demo_dir/logs/controller.log" 2>&1 &
pids+=($!)
"$bin/fabric/weft-fabric" --config deploy/examples/fabric.yaml --listen "$fabric_addr" \
  --controller "$controller_addr" >"$demo_dir/logs/fabric.log" 2>&1 &
pids+=($!)
# Agents discover their NICs from the twin, as real ones do from their hardware.
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/${fabric_addr##*:}) 2>/dev/null && break
  sleep 0.1
done

# Pingmesh on one host: every agent answers probes on its own UDP port (7700 + i; on a
# shared port only the first would bind), and its 8 NICs take loopback addresses
# 127.<rack>.<node>.<NIC + 1> in place of the twin's 10.x ones, so probes really travel.
i=0
r=0
for rack in "${racks[@]}"; do
  r=$((r + 1))
  pod=pod-1
  [[ "$rack" == c || "$rack" == d ]] && pod=pod-2
  for n in $(seq 1 $nodes_per_rack); do
    node=$(printf "gpu-%s%02d" "$rack" "$n")
    nic_ipv4=$(seq -s, -f "127.$r.$n.%g" 1 8)
    args=(--insecure --node "$node" --rack "rack-$rack" --pod "$pod" --controller "$controller_addr"
          --metrics "127.0.0.1:$((7500 + i))" --health "127.0.0.1:$((7600 + i))"
          --backend fabric --fabric "$fabric_addr"
          --probe_port "$((7700 + i))" --nic_ipv4 "$nic_ipv4")
    "$bin/agent/weft-agent" "${args[@]}" >"$demo_dir/logs/$node.log" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
done
total=$i

echo "weft demo: controller on $controller_addr, fabric twin on $fabric_addr, $total nodes starting (logs in $demo_dir/logs/)"
for _ in $(seq 150); do
  up=$("${weftctl[@]}" nodes --output json 2>/dev/null |
       grep -c '"state": "NODE_STATE_HEALTHY"' || true)
  [ "$up" -ge "$total" ] && break
  sleep 0.2
done
"${weftctl[@]}" nodes || true

# The jobs: placed once the nodes are up, then a few iterations to settle.
sleep 8
echo
echo "weft demo: pingmesh, every node probing its peers over loopback UDP:"
"${weftctl[@]}" pingmesh status 2>/dev/null | head -n 12 || true
# An agent whose probe port something else holds goes on without pingmesh; say which.
for log in $(grep -l "NOT answering probes" "$demo_dir"/logs/gpu-*.log 2>/dev/null); do
  echo "weft demo: WARNING: $(basename "$log" .log) is not probed: $(grep -o 'cannot bind UDP port [0-9]*' "$log" | head -n 1) (another process holds it; see $log)" >&2
done
echo
echo "weft demo: the jobs, placed by Weft, running on the twin:"
"${weftctl[@]}" jobs || true

# The fault: the first NIC of the first node of the first job storms PFC pauses 95% of the time.
victim=$("${weftctl[@]}" fabric jobs --output json 2>/dev/null |
         sed -n 's/^ *"nodes": \[ *"\([^"]*\)".*/\1/p; /"nodes": \[$/{n;s/^ *"\([^"]*\)".*/\1/p}' |
         head -n 1)
victim=${victim:-gpu-a01}
echo
echo "weft demo: injecting a PFC pause storm on $victim mlx5_0 (95% of the time)"
"${weftctl[@]}" fabric inject pfc_storm --node "$victim" --nic mlx5_0 --value 0.95 || true
sleep 6
echo
echo "weft demo: the job on $victim slows down (ITER_S up against its first iteration):"
"${weftctl[@]}" jobs || true
echo
echo "weft demo: the controller flags $victim (DEGRADED, pfc_storm) and drains it 10 s later;"
echo "the job generator sees the drain and places the job again without it."
for _ in $(seq 60); do
  "${weftctl[@]}" node "$victim" 2>/dev/null | grep -q -i "drained" && break
  sleep 1
done
sleep 8
"${weftctl[@]}" jobs || true
"${weftctl[@]}" fabric jobs || true

cat <<EOT

Weft demo is running: the fabric twin, 1 controller, $total agents (4 racks x 8 nodes x 8 NICs),
four training jobs. $victim's mlx5_0 still storms PFC pauses; the job that ran on it now runs
elsewhere (PLACEMENTS 2 in 'weftctl fabric jobs').

Look at it:
  ${weftctl[*]} jobs                     each job: nodes, racks, iteration time, bus bandwidth, tokens/s, congestion
  ${weftctl[*]} fabric jobs              the twin's view: reservation, placements, state
  ${weftctl[*]} fabric links --busy      the fabric's busy ports: utilisation, queue, ECN marks, pauses
  ${weftctl[*]} fabric faults            the injected faults; 'fabric clear f1' ends the storm
  ${weftctl[*]} fabric inject link_down --link tor-a--spine-0    more faults: gray_loss, degraded_link, dead_node ...
  ${weftctl[*]} nodes                    all nodes, state and rates
  ${weftctl[*]} node $victim             one node's NICs and findings
  ${weftctl[*]} pingmesh status          the nodes probing each other over UDP, and any blamed NIC or link
  ${weftctl[*]} pingmesh matrix          probe loss and RTT between racks
  curl -s http://$metrics_addr/metrics             controller metrics (Prometheus)

Press Ctrl-C to stop everything.
EOT
wait "${pids[0]}"
