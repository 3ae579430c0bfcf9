// DCQCN settings side by side on training jobs (issue 20: "firmware defaults, the DCQCN
// paper's, and Barre's ... all-reduce bus bandwidth, MoE all-to-all completion"): the
// three presets of sim/cc_params.h pushed to every NIC of a sim::Twin with
// Twin::SetNicTunables, the same two jobs run on each.
//
// Fabric: 4 racks × 8 nodes × 8 NICs of 400 Gb/s, 8 uplinks per ToR to 8 spines,
// oversubscribed 4:1 (--oversubscription); the switches' ECN ramp is the HPCC simulator's
// firmware-like one scaled to 400 Gb/s (Kmin 1.6 MB, Kmax 6.4 MB, Pmax 0.2, every packet
// marked above Kmax; sim/cc_params.h HpccFabricSide), 1000-byte packets.
// Jobs, together (bench/sim/job_models.h): a 7B ring all-reduce over nodes 1-4 of every
// rack in rank order a-01, b-01, c-01, d-01, a-02, ... (every ring edge crosses racks),
// and MoE-16B over nodes 5-8 of every rack in one expert group of 16 (an all-to-all across
// racks: 15 → 1 at every NIC's ToR port, the uplinks 4:1). Both iterate from t = 0; the
// statistics are over --simulated_s, leaving out each job's first iteration.
//
// Per preset: the ring's all-reduce bus bandwidth (nccl-tests' busbw, per node across its
// NICs) and time, the MoE all-to-all's completion time, the congested ports (where DCQCN
// holds flows back) with their mean queue and how many have no fixed point ("unsettled",
// the queue at Kmax), and the ECN marks and CNPs per second over all NICs; ratios
// against the firmware defaults. Run it optimized:
//   bazel run -c opt //bench/sim:dcqcn_on_jobs
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "bench/sim/job_models.h"
#include "bench/sim/or_die.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "sim/cc_params.h"
#include "sim/training_job.h"
#include "sim/twin.h"

ABSL_FLAG(double, oversubscription, 4, "ToR uplink oversubscription");
ABSL_FLAG(double, simulated_s, 10, "simulated seconds per preset");

namespace weft::sim {
namespace {

using bench::OrDie;

constexpr int kRacks = 4, kNodesPerRack = 8, kNics = 8;
constexpr double kNicBps = 400e9;
constexpr double kStepS = 0.01;

struct Result {
  double busbw_bytes_per_s = 0, all_reduce_s = 0, alltoall_s = 0;
  double congested_ports = 0, unsettled_ports = 0, queue_bytes = 0;  // time averages
  double marks_per_s = 0, cnps_per_s = 0;
  int ring_iterations = 0, moe_iterations = 0;
};

uint64_t Counter(const TwinNicReading& r, const std::string& name) {
  auto it = r.hw_counters.find(name);
  return it == r.hw_counters.end() ? 0 : it->second;
}

Result Run(const weft::v1::DcqcnParams& preset) {
  std::vector<RackSpec> racks = DemoRacks(kRacks, kNodesPerRack, kRacks);
  TwinFabricOptions o;
  o.nics_per_node = kNics;
  o.nic_bps = kNicBps;
  o.uplinks_per_tor = 8;
  o.oversubscription = absl::GetFlag(FLAGS_oversubscription);
  // The switch side (ECN ramp, packet unit) the NICs' settings are mapped against.
  const DcqcnParams switch_side =
      OrDie(MapCcParams(FirmwareDefaultCcParams(), HpccFabricSide(kNicBps))).params;
  Twin twin = OrDie(Twin::Create(OrDie(BuildTwinTopology(racks, o)), switch_side));
  for (int nic = 0; nic < static_cast<int>(twin.topology().fabric.nics().size()); ++nic) {
    OrDie(twin.SetNicTunables(nic, weft::v1::NodeQos(), preset));
  }
  TrainingJobSpec ring = bench::DenseJob("ring-7b", 7e9, AllReduceAlgorithm::kRing, 16);
  TrainingJobSpec moe = bench::MoeJob("moe-16b", 16, /*expert_group_nodes=*/16);
  for (int n = 0; n < kNodesPerRack / 2; ++n) {
    for (const RackSpec& rack : racks) {
      ring.nodes.push_back(OrDie(twin.NodeByName(rack.nodes[n])));
      moe.nodes.push_back(OrDie(twin.NodeByName(rack.nodes[n + kNodesPerRack / 2])));
    }
  }
  OrDie(twin.StartJob(ring));
  OrDie(twin.StartJob(moe));

  Result r;
  std::vector<int> seen = {0, 0};
  double samples = 0, queue_samples = 0;
  const int steps = static_cast<int>(absl::GetFlag(FLAGS_simulated_s) / kStepS + 0.5);
  for (int step = 0; step < steps; ++step) {
    OrDie(twin.Advance(kStepS));
    int congested = 0, unsettled = 0;
    double queue = 0;
    for (const PortState& port : twin.model().ports()) {
      if (!port.congested) continue;
      ++congested;
      unsettled += !port.settled;
      queue += port.queue_bytes;
    }
    r.congested_ports += congested;
    r.unsettled_ports += unsettled;
    if (congested > 0) {
      r.queue_bytes += queue / congested;
      ++queue_samples;
    }
    ++samples;
    const std::vector<TwinJobStatus> jobs = twin.jobs();
    for (int j = 0; j < 2; ++j) {
      if (jobs[j].iterations_done == seen[j]) continue;
      if (jobs[j].iterations_done != seen[j] + 1) {
        std::fprintf(stderr, "%s: more than one iteration in %.2f s\n", jobs[j].name.c_str(), kStepS);
        std::exit(1);
      }
      if (seen[j]++ == 0) continue;  // the first iteration starts with every job at once
      for (const PhaseReport& p : jobs[j].last->phases) {
        if (j == 0 && p.kind == PhaseKind::kAllReduce) {
          r.busbw_bytes_per_s += p.busbw_bytes_per_s;
          r.all_reduce_s += p.time_s;
          ++r.ring_iterations;
        }
        if (j == 1 && p.kind == PhaseKind::kAllToAll) {
          r.alltoall_s += p.time_s;
          ++r.moe_iterations;
        }
      }
    }
  }
  r.congested_ports /= samples;
  r.unsettled_ports /= samples;
  if (queue_samples > 0) r.queue_bytes /= queue_samples;
  if (r.ring_iterations > 0) {
    r.busbw_bytes_per_s /= r.ring_iterations;
    r.all_reduce_s /= r.ring_iterations;
  }
  if (r.moe_iterations > 0) r.alltoall_s /= r.moe_iterations;
  for (int nic = 0; nic < static_cast<int>(twin.topology().fabric.nics().size()); ++nic) {
    const TwinNicReading reading = OrDie(twin.ReadNic(nic));
    r.marks_per_s += Counter(reading, "np_ecn_marked_roce_packets") / twin.time_s();
    r.cnps_per_s += Counter(reading, "np_cnp_sent") / twin.time_s();
  }
  return r;
}

std::string Ratio(double value, double base) {
  return base > 0 ? absl::StrFormat("%.2f×", value / base) : "—";
}

int Main() {
  std::printf("%.0f:1 ToR uplinks, %.0f simulated s per preset\n\n",
              absl::GetFlag(FLAGS_oversubscription), absl::GetFlag(FLAGS_simulated_s));
  std::printf("| settings | ring all-reduce busbw (GB/s per node) | vs defaults | all-reduce ms | "
              "MoE all-to-all ms | vs defaults | congested ports | unsettled | mean queue (KB) "
              "| vs defaults | ECN marks (M/s) | CNPs (M/s) | vs defaults | iterations (ring, "
              "MoE) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  Result base;
  bool first = true;
  for (const CcPreset& preset : CcPresets()) {
    const Result r = Run(preset.cc);
    if (first) base = r;
    first = false;
    std::printf(
        "| %s | %.1f | %s | %.1f | %.1f | %s | %.1f | %.1f | %.1f | %s | %.2f | %.2f | %s | %d, "
        "%d |\n",
        preset.name.c_str(), r.busbw_bytes_per_s / 1e9,
        Ratio(r.busbw_bytes_per_s, base.busbw_bytes_per_s).c_str(), 1e3 * r.all_reduce_s,
        1e3 * r.alltoall_s, Ratio(r.alltoall_s, base.alltoall_s).c_str(), r.congested_ports,
        r.unsettled_ports, r.queue_bytes / 1e3, Ratio(r.queue_bytes, base.queue_bytes).c_str(),
        r.marks_per_s / 1e6, r.cnps_per_s / 1e6, Ratio(r.cnps_per_s, base.cnps_per_s).c_str(),
        r.ring_iterations, r.moe_iterations);
  }
  return 0;
}

}  // namespace
}  // namespace weft::sim

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::sim::Main();
}
