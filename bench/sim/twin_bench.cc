// The whole fabric twin's speed at the issue's scale (issue 20: "live model at 1,024
// nodes × 8 NICs with 50 jobs, simulated seconds per wall second on one core, target
// ≥ 1"): a sim::Twin of 1,024 nodes × 8 NICs of 400 Gb/s in racks of 8 (128 ToRs, 32
// uplinks each to 16 spines, 2:1 oversubscribed: live_model_bench's leaf-spine), 50 jobs
// of 20 nodes dealt at random (seed fixed, so jobs straddle racks and all meet at the
// spines) or, with --placement=racks, each on consecutive nodes (racks filled in order, as
// a rack-aware placer would), iterating forever,
// advanced in 1 s steps (the agents' interval) and in 0.1 s steps (weft-fabric's tick).
// Jobs, in turn: 7B ring all-reduce, 7B double binary tree, MoE-16B (all-to-all in expert
// groups of 4 nodes), 13B in 2 pipeline stages × 10 (bench/sim/job_models.h).
//
// The baseline row, measured in the same run on the same fabric: live_model_bench's
// measure, the live model given every phase's flows of all 50 jobs at once and solved
// again every 1 s interval (SetFlows + Advance(1 s)). Run it optimized:
//   bazel run -c opt //bench/sim:twin_bench
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/sim/job_models.h"
#include "bench/sim/or_die.h"
#include "sim/live_model.h"
#include "sim/training_job.h"
#include "sim/twin.h"

ABSL_FLAG(int, nodes, 1024, "GPU nodes (racks of --nodes_per_rack)");
ABSL_FLAG(int, nodes_per_rack, 8, "nodes per rack");
ABSL_FLAG(int, jobs, 50, "training jobs");
ABSL_FLAG(int, job_nodes, 20, "nodes per job (a multiple of 4)");
ABSL_FLAG(double, simulated_s, 30, "simulated seconds per step size");
ABSL_FLAG(std::string, steps, "1,0.1", "Advance step sizes in seconds, comma-separated");
ABSL_FLAG(int, baseline_intervals, 10, "1 s intervals of the live-model baseline");
ABSL_FLAG(std::string, placement, "random",
          "random (nodes dealt at random, seed 1) or racks (each job on consecutive nodes)");

namespace weft::sim {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// CPU seconds of this thread: the machine is shared, so wall time includes other work.
double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

using bench::OrDie;

TwinTopology Topology() {
  const int per_rack = absl::GetFlag(FLAGS_nodes_per_rack);
  const int racks = (absl::GetFlag(FLAGS_nodes) + per_rack - 1) / per_rack;
  TwinFabricOptions o;
  o.nics_per_node = 8;
  o.nic_bps = 400e9;
  o.uplinks_per_tor = 32;
  o.spines = 16;
  o.oversubscription = 2;
  return OrDie(BuildTwinTopology(DemoRacks(racks, per_rack, racks), o));
}

std::vector<TrainingJobSpec> Jobs(int num_nodes) {
  const int n = absl::GetFlag(FLAGS_job_nodes);
  std::vector<int> nodes(num_nodes);
  std::iota(nodes.begin(), nodes.end(), 0);
  if (absl::GetFlag(FLAGS_placement) == "random") {
    std::mt19937 rng(1);
    std::shuffle(nodes.begin(), nodes.end(), rng);
  }
  std::vector<TrainingJobSpec> jobs;
  for (int j = 0; j < absl::GetFlag(FLAGS_jobs); ++j) {
    const std::string name = absl::StrFormat("job-%02d", j);
    TrainingJobSpec spec;
    switch (j % 4) {
      case 0: spec = bench::DenseJob(name, 7e9, AllReduceAlgorithm::kRing, n); break;
      case 1: spec = bench::DenseJob(name, 7e9, AllReduceAlgorithm::kDoubleBinaryTree, n); break;
      case 2: spec = bench::MoeJob(name, n, /*expert_group_nodes=*/4); break;
      default: spec = bench::PipelineJob(name, 13e9, /*hidden=*/5120, n, /*stages=*/2);
    }
    spec.nodes.assign(nodes.begin() + j * n, nodes.begin() + (j + 1) * n);
    jobs.push_back(std::move(spec));
  }
  return jobs;
}

struct Measure {
  std::string what;
  double simulated_s = 0, wall_s = 0, cpu_s = 0;
  int solves = 0, calls = 0;
  double max_call_ms = 0;
  int iterations = 0;
};

Measure RunTwin(double step_s, const std::vector<TrainingJobSpec>& jobs) {
  Twin twin = OrDie(Twin::Create(Topology(), DcqcnParams()));
  for (const TrainingJobSpec& job : jobs) OrDie(twin.StartJob(job));
  Measure m;
  m.what = absl::StrFormat("twin, Advance(%g s)", step_s);
  const int solves_before = twin.solves();
  const int calls = static_cast<int>(absl::GetFlag(FLAGS_simulated_s) / step_s + 0.5);
  for (int c = 0; c < calls; ++c) {
    const Clock::time_point start = Clock::now();
    const double cpu = CpuSeconds();
    OrDie(twin.Advance(step_s));
    m.cpu_s += CpuSeconds() - cpu;
    const double s = Seconds(start);
    m.wall_s += s;
    m.max_call_ms = std::max(m.max_call_ms, 1e3 * s);
  }
  m.simulated_s = calls * step_s;
  m.calls = calls;
  m.solves = twin.solves() - solves_before;
  for (const TwinJobStatus& job : twin.jobs()) m.iterations += job.iterations_done;
  return m;
}

Measure RunBaseline(const std::vector<TrainingJobSpec>& jobs) {
  TwinTopology topology = Topology();
  std::vector<FlowSpec> flows;
  uint16_t port = kFirstEphemeralPort;
  for (const TrainingJobSpec& job : jobs) {
    for (const JobPhase& phase : OrDie(BuildJobPhases(topology.fabric, job, &port))) {
      flows.insert(flows.end(), phase.flows.begin(), phase.flows.end());
    }
  }
  LiveModel model = OrDie(LiveModel::Create(std::move(topology.fabric), DcqcnParams()));
  Measure m;
  m.what = absl::StrFormat("baseline: live model, all %zu flows set every 1 s", flows.size());
  const int intervals = absl::GetFlag(FLAGS_baseline_intervals);
  for (int t = 0; t < intervals; ++t) {
    std::vector<FlowSpec> copy = flows;
    const Clock::time_point start = Clock::now();
    const double cpu = CpuSeconds();
    OrDie(model.SetFlows(std::move(copy)));
    OrDie(model.Advance(1.0));
    m.cpu_s += CpuSeconds() - cpu;
    const double s = Seconds(start);
    m.wall_s += s;
    m.max_call_ms = std::max(m.max_call_ms, 1e3 * s);
  }
  m.simulated_s = m.calls = m.solves = intervals;
  return m;
}

int Main() {
  const Clock::time_point start = Clock::now();
  const std::string placement = absl::GetFlag(FLAGS_placement);
  if (placement != "random" && placement != "racks") {
    std::fprintf(stderr, "--placement: '%s' is neither random nor racks\n", placement.c_str());
    return 1;
  }
  const TwinTopology topology = Topology();
  std::printf("placement %s; %zu nodes, %zu NICs, %zu switches, %zu links; built in %.3f s\n",
              placement.c_str(), topology.nodes.size(), topology.fabric.nics().size(),
              topology.fabric.switches().size(), topology.fabric.links().size(), Seconds(start));
  const std::vector<TrainingJobSpec> jobs = Jobs(static_cast<int>(topology.nodes.size()));
  std::vector<Measure> rows = {RunBaseline(jobs)};
  for (absl::string_view step : absl::StrSplit(absl::GetFlag(FLAGS_steps), ',')) {
    double step_s = 0;
    if (!absl::SimpleAtod(step, &step_s) || step_s <= 0) {
      std::fprintf(stderr, "--steps: '%s' is not a positive number of seconds\n",
                   std::string(step).c_str());
      return 1;
    }
    rows.push_back(RunTwin(step_s, jobs));
  }
  // CPU time is the figure (one core, shared machine); wall time is printed beside it.
  const double base = rows[0].simulated_s / rows[0].cpu_s;
  std::printf("\n| run | simulated s | CPU s (wall s) | simulated s per CPU s | vs baseline | "
              "solves per simulated s | CPU ms per solve | CPU ms per call | wall ms per call "
              "(mean, max) | iterations done |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Measure& m : rows) {
    const double rate = m.simulated_s / m.cpu_s;
    std::printf("| %s | %.1f | %.2f (%.2f) | %.3f | %.3f× | %.1f | %.1f | %.2f | %.2f, %.1f | %d |\n",
                m.what.c_str(), m.simulated_s, m.cpu_s, m.wall_s, rate, rate / base,
                m.solves / m.simulated_s, m.solves > 0 ? 1e3 * m.cpu_s / m.solves : 0,
                1e3 * m.cpu_s / m.calls, 1e3 * m.wall_s / m.calls, m.max_call_ms, m.iterations);
  }
  return 0;
}

}  // namespace
}  // namespace weft::sim

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::sim::Main();
}
