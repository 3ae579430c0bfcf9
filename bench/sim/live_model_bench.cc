// The live model's cost at the scale: 1,024 nodes × 8 NICs, 50 training jobs'
// flows, one Advance per 1 s telemetry interval. Reports the wall time to build the
// fabric, to set (route and solve) the flows, and per Advance, and the simulated seconds
// per wall second when the flows change every interval (SetFlows + Advance) and when
// they do not (Advance only). Run it optimized:
//   bazel run -c opt //bench/sim:live_model_bench -- --layout=rail
//
// Jobs: `jobs` jobs of nodes/jobs nodes each, the nodes dealt at random (seed fixed) so
// jobs straddle groups/racks; every job runs a ring per rail (node j NIC i → node j + 1
// NIC i), every `alltoall_every`-th job also an all-to-all per rail (MoE).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "sim/live_model.h"

ABSL_FLAG(std::string, layout, "rail", "rail or leafspine");
ABSL_FLAG(int, nodes, 1024, "GPU nodes");
ABSL_FLAG(int, nics_per_node, 8, "NICs per node");
ABSL_FLAG(double, nic_bps, 400e9, "NIC speed");
ABSL_FLAG(double, oversubscription, 2, "leaf uplink oversubscription");
ABSL_FLAG(int, jobs, 50, "training jobs");
ABSL_FLAG(int, alltoall_every, 10, "every n-th job also runs an all-to-all per rail (0: none)");
ABSL_FLAG(int, intervals, 20, "telemetry intervals (1 s each) timed");

namespace weft::sim {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

Fabric Build() {
  const int nodes = absl::GetFlag(FLAGS_nodes);
  if (absl::GetFlag(FLAGS_layout) == "rail") {
    RailOptions o;
    o.nodes = nodes;
    o.nodes_per_group = 32;
    o.nics_per_node = absl::GetFlag(FLAGS_nics_per_node);
    o.nic_bps = absl::GetFlag(FLAGS_nic_bps);
    o.uplinks_per_leaf = 16;
    o.oversubscription = absl::GetFlag(FLAGS_oversubscription);
    return BuildRailOptimized(o).value();
  }
  LeafSpineOptions o;
  o.nodes_per_rack = 8;
  o.racks = (nodes + 7) / 8;
  o.nics_per_node = absl::GetFlag(FLAGS_nics_per_node);
  o.nic_bps = absl::GetFlag(FLAGS_nic_bps);
  o.uplinks_per_tor = 32;
  o.spines = 16;
  o.oversubscription = absl::GetFlag(FLAGS_oversubscription);
  return BuildLeafSpine(o).value();
}

std::vector<FlowSpec> Jobs(const Fabric& fabric, uint32_t seed) {
  const int nics = absl::GetFlag(FLAGS_nics_per_node);
  std::vector<int> nodes(fabric.num_nodes());
  std::iota(nodes.begin(), nodes.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(nodes.begin(), nodes.end(), rng);
  const int jobs = absl::GetFlag(FLAGS_jobs);
  const int per_job = fabric.num_nodes() / jobs;
  std::vector<FlowSpec> flows;
  auto port = [&] { return static_cast<uint16_t>(49152 + rng() % 16384); };
  for (int j = 0; j < jobs; ++j) {
    const int* member = &nodes[j * per_job];
    const bool alltoall = absl::GetFlag(FLAGS_alltoall_every) > 0 &&
                          j % absl::GetFlag(FLAGS_alltoall_every) == 0;
    for (int i = 0; i < nics; ++i) {
      for (int a = 0; a < per_job; ++a) {
        for (int b = 0; b < per_job; ++b) {
          const bool ring = b == (a + 1) % per_job;
          if (a == b || !(ring || alltoall)) continue;
          flows.push_back({member[a] * nics + i, member[b] * nics + i, port()});
        }
      }
    }
  }
  return flows;
}

int Main() {
  auto start = std::chrono::steady_clock::now();
  Fabric fabric = Build();
  const double build_s = Seconds(start);
  std::printf("layout %s: %zu NICs, %zu switches, %zu links; built in %.3f s\n",
              absl::GetFlag(FLAGS_layout).c_str(), fabric.nics().size(), fabric.switches().size(),
              fabric.links().size(), build_s);
  LiveModel model = LiveModel::Create(std::move(fabric), DcqcnParams()).value();
  const int intervals = absl::GetFlag(FLAGS_intervals);
  double set_s = 0, advance_s = 0;
  size_t flows = 0;
  int congested = 0, fixed_points = 0;
  for (int t = 0; t < intervals; ++t) {
    std::vector<FlowSpec> specs = Jobs(model.fabric(), 1 + t);  // new flows every interval
    flows = specs.size();
    start = std::chrono::steady_clock::now();
    if (absl::Status s = model.SetFlows(std::move(specs)); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    set_s += Seconds(start);
    start = std::chrono::steady_clock::now();
    (void)model.Advance(1.0);
    advance_s += Seconds(start);
    congested = 0;
    for (const PortState& p : model.ports()) congested += p.congested;
    fixed_points = model.fixed_points_computed();
  }
  double hops = 0;
  for (const FlowState& f : model.flows()) hops += f.path.size();
  std::printf("%zu flows (%.2f links per path), %d congested ports, %d fixed points solved\n",
              flows, hops / flows, congested, fixed_points);
  std::printf("SetFlows (route + solve): %.2f ms per interval\n", set_s / intervals * 1e3);
  std::printf("Advance(1 s): %.3f ms\n", advance_s / intervals * 1e3);
  std::printf("simulated s per wall s: %.0f with new flows every interval, %.0f advancing only\n",
              intervals / (set_s + advance_s), intervals / advance_s);
  return 0;
}

}  // namespace
}  // namespace weft::sim

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::sim::Main();
}
