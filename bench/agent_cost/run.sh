#!/usr/bin/env bash
# Agent collection cost next to Debian's prometheus-node-exporter (infiniband collector),
# both reading the same 8-NIC mlx5 fixture tree (tests/fixtures/mlx5_8nic_8gpu.tree).
#
#   bench/agent_cost/run.sh [--collections N] [--out FILE]
#
# weft-agent runs for real (linux backend, --root at the fixture) against a real
# weft-controller, one collection every 100 ms: each collection reads every sysfs
# counter file of the 8 NICs, computes rates, updates its Prometheus counters and sends
# one TelemetryBatch over gRPC. node_exporter is scraped back to back N times; each
# scrape reads the same files and renders the exposition. CPU is utime+stime from
# /proc/<pid>/stat over the run, divided by the number of collections; memory is VmRSS
# and VmHWM at the end. Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."

collections=300
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --collections) collections="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--collections N] [--out FILE]" >&2; exit 2 ;;
  esac
done

command -v prometheus-node-exporter >/dev/null || {
  echo "installing prometheus-node-exporter (the peer of this benchmark)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus-node-exporter >/dev/null
}
# Built as shipped: optimised, with gRPC/protobuf/Abseil/OpenSSL linked from their
# archives (--config=static), which keeps the agent's resident memory down.
prefix=/tmp/weft-static-
bazel build -c opt --config=static --symlink_prefix="$prefix" //agent:weft-agent \
  //controller:weft-controller //tests:materialize_fixture >/dev/null 2>&1
bin="${prefix}bin"

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$bin/tests/materialize_fixture" tests/fixtures/mlx5_8nic_8gpu.tree "$work/root"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

# --- node_exporter ---------------------------------------------------------------
ne_port=$(free_port)
prometheus-node-exporter --path.sysfs="$work/root/sys" --collector.disable-defaults \
  --collector.infiniband --web.listen-address="127.0.0.1:$ne_port" >"$work/ne.log" 2>&1 &
ne_pid=$!; pids+=($ne_pid)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null && break; sleep 0.1; done
series=$(curl -sf "http://127.0.0.1:$ne_port/metrics" | grep -c '^node_infiniband_')
for _ in $(seq 20); do curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null; done  # warm up
t0=$(cpu_ticks $ne_pid)
for _ in $(seq "$collections"); do curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null; done
t1=$(cpu_ticks $ne_pid)
ne_cpu_ms=$(awk -v d=$((t1 - t0)) -v n="$collections" -v hz="$hz" 'BEGIN{printf "%.3f", d*1000/hz/n}')
ne_rss=$(status_kb $ne_pid VmRSS); ne_hwm=$(status_kb $ne_pid VmHWM)

# --- weft-agent ------------------------------------------------------------------
c_port=$(free_port); m_port=$(free_port); am_port=$(free_port)
"$bin/controller/weft-controller" --listen "127.0.0.1:$c_port" --metrics "127.0.0.1:$m_port" \
  --telemetry_interval_ms=100 --state_dir "$work/controller-state" >"$work/controller.log" 2>&1 &
pids+=($!)
"$bin/agent/weft-agent" --node bench-node --backend linux --root "$work/root" \
  --controller "127.0.0.1:$c_port" --metrics "127.0.0.1:$am_port" --health off \
  --interval_ms=100 --log_level=error >"$work/agent.log" 2>&1 &
agent_pid=$!; pids+=($agent_pid)
batches() {
  curl -sf "http://127.0.0.1:$am_port/metrics" |
    awk '/^weft_agent_telemetry_batches_sent_total/ {print $2}' | head -1
}
for _ in $(seq 100); do b=$(batches || true); [ -n "${b:-}" ] && [ "${b%.*}" -ge 20 ] && break; sleep 0.1; done
b0=$(batches); t0=$(cpu_ticks $agent_pid)
sleep "$(awk -v n="$collections" 'BEGIN{print n/10}')"
b1=$(batches); t1=$(cpu_ticks $agent_pid)
sent=$(awk -v a="$b0" -v b="$b1" 'BEGIN{print int(b - a)}')
agent_cpu_ms=$(awk -v d=$((t1 - t0)) -v n="$sent" -v hz="$hz" 'BEGIN{printf "%.3f", d*1000/hz/n}')
agent_rss=$(status_kb $agent_pid VmRSS); agent_hwm=$(status_kb $agent_pid VmHWM)
# The agent's own /metrics, scraped like node_exporter's (Prometheus scrapes it too).
t0=$(cpu_ticks $agent_pid)
for _ in $(seq "$collections"); do curl -sf "http://127.0.0.1:$am_port/metrics" >/dev/null; done
t1=$(cpu_ticks $agent_pid)
# Subtract the collections that ran meanwhile (10 per second of wall time is too coarse
# to separate; report the scrape cost including them, an upper bound).
agent_scrape_ms=$(awk -v d=$((t1 - t0)) -v n="$collections" -v hz="$hz" 'BEGIN{printf "%.3f", d*1000/hz/n}')
agent_series=$(curl -sf "http://127.0.0.1:$am_port/metrics" | grep -c '^weft_nic_')

ratio=$(awk -v a="$agent_cpu_ms" -v b="$ne_cpu_ms" 'BEGIN{printf "%.2f", a/b}')
rss_mib=$(awk -v k="$agent_rss" 'BEGIN{printf "%.1f", k/1024}')
hwm_mib=$(awk -v k="$agent_hwm" 'BEGIN{printf "%.1f", k/1024}')
ne_rss_mib=$(awk -v k="$ne_rss" 'BEGIN{printf "%.1f", k/1024}')
ne_hwm_mib=$(awk -v k="$ne_hwm" 'BEGIN{printf "%.1f", k/1024}')

report=$(cat <<EOT
## Agent collection cost vs node_exporter

$(date -u +%Y-%m-%d), this machine ($(nproc) cores), \`bench/agent_cost/run.sh --collections $collections\`.
Both read the same 8-NIC ConnectX-7 fixture tree (\`tests/fixtures/mlx5_8nic_8gpu.tree\`):
weft-agent (\`-c opt --config=static\`) with the linux backend, one collection every 100 ms including rate math and a
gRPC send to a real controller ($sent collections measured); Debian's node_exporter 1.5
(\`--collector.disable-defaults --collector.infiniband\`), $collections back-to-back scrapes.
The fixture has no netdevs on this machine, so the agent's per-NIC ethtool ioctl fails fast
(ENODEV) instead of reading PFC counters.

| | CPU per collection | RSS (now / peak) | NIC series exposed |
|---|---|---|---|
| weft-agent (collect + rates + gRPC send) | ${agent_cpu_ms} ms | ${rss_mib} / ${hwm_mib} MiB | ${agent_series} |
| node_exporter (collect + render scrape) | ${ne_cpu_ms} ms | ${ne_rss_mib} / ${ne_hwm_mib} MiB | ${series} |
| **ratio weft / node_exporter** | **${ratio}** | | |

Serving one scrape of the agent's own /metrics costs ${agent_scrape_ms} ms of agent CPU (upper
bound: includes the collections that ran during the scrapes). Targets: at most 1/3 of
node_exporter's CPU per collection (ratio ≤ 0.33) and at most 15 MiB RSS.
EOT
)
echo "$report"
[ -n "$out" ] && echo "$report" >"$out"
exit 0
