// The motivating comparison of issue 20 on the fabric twin: the same training jobs on the
// same nodes and fabric, over RoCE v2 and over TCP, with TCP's host costs taken from what
// weft-perf (bench/datapath) measures on this machine. Four rows per job, as the
// motivating table has them: all-reduce time, tokens/s, GPU utilisation (compute share of
// the iteration) and the CPU load of communication, and TCP over RoCE. Prints Markdown
// for docs/benchmarks.md. Run it optimized:
//   bazel run -c opt //bench/sim:roce_vs_tcp
//
// Cluster and jobs as bench/sim/placement_on_twin's (4 racks × 8 nodes × 8 NICs of
// 400 Gb/s, 8 uplinks per ToR to 8 spines, 4:1), each job on 4 nodes of one rack, as
// Weft's engine places them there; nothing else runs, so the two jobs share no link.
//
// RoCE v2: the twin as is. The NIC moves the bytes (no host CPU per byte in the model)
// and a flow goes as fast as its max-min share of the fabric.
// TCP: the host's cores move the bytes. Each node can push cores / cpu_s_per_byte bytes/s
// (TrainingJobSpec::host_bps_per_node, split evenly over the node's flows of each
// phase), where cpu_s_per_byte is weft-perf's CPU per byte sent, summed over the sending
// and the receiving process (loopback TCP: one process's send copy and stack plus the
// other's receive), so a node that sends and receives X bytes spends X · cpu_s_per_byte.
// Every dependent step pays TCP's software latency on top of the twin's time: a ring
// all-reduce has 2(n − 1) steps per call, an all-to-all one per call (all peers at once);
// the twin moves each phase's bytes in one piece, so the calls only count for latency.
// CPU load = bytes a node sends × cpu_s_per_byte / time.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sim/training_job.h"

// Defaults: weft-perf on this machine, quiet runs of 2026-12-01 (docs/benchmarks.md,
// "Fabric twin: RoCE v2 against TCP, the motivating comparison", says which and how).
ABSL_FLAG(double, tcp_cpu_ns_per_byte, 0.30,
          "TCP's CPU per byte sent, sender and receiver together (ns); weft-perf all-to-all, "
          "4 and 8 ranks, 16-256 MiB: 0.29-0.31");
ABSL_FLAG(double, tcp_step_latency_us, 6.2,
          "TCP's software latency per dependent step (µs); weft-perf all-reduce, 2 ranks, 8 B");
ABSL_FLAG(std::string, comm_cores, "16,8", "Cores per node TCP may use for communication");
ABSL_FLAG(int, all_reduce_calls_per_iteration, 1,
          "All-reduce calls per iteration (1: one call over every gradient; a framework's "
          "gradient buckets: one per bucket), each paying the ring's 2(n - 1) steps");
ABSL_FLAG(int, alltoalls_per_iteration, 108,
          "MoE all-to-all calls per iteration (27 layers × dispatch, combine × fwd, bwd)");

namespace weft::sim {
namespace {

constexpr int kRacks = 4, kNodesPerRack = 8, kGpus = 8, kNics = 8, kNodes = 4;
constexpr double kNicBps = 400e9;
constexpr double kGpuFlops = 989e12 * 0.40;
constexpr double kTokensPerNode = kGpus * 4096.0;
constexpr int kIterations = 3;

double ComputeSeconds(double active_parameters) {
  return 6 * active_parameters * kTokensPerNode / (kGpus * kGpuFlops);
}

// placement_on_twin's 7B ring and MoE jobs, on nodes 0-3 (rack a) and 8-11 (rack b).
std::vector<TrainingJobSpec> Jobs() {
  TrainingJobSpec dense;
  dense.name = "dense-7b ring";
  dense.model = {.parameters = 7e9,
                 .bytes_per_gradient_element = 2,
                 .tokens_per_iteration = kTokensPerNode * kNodes,
                 .compute_s_per_iteration = ComputeSeconds(7e9)};
  dense.nodes = {0, 1, 2, 3};
  TrainingJobSpec moe;
  moe.name = "moe-16b a2a";
  moe.model = {.parameters = 1.4e9,
               .bytes_per_gradient_element = 2,
               .tokens_per_iteration = kTokensPerNode * kNodes,
               .compute_s_per_iteration = ComputeSeconds(2.8e9),
               .alltoall_bytes_per_node = 27 * 4 * kTokensPerNode * 6 * 2048 * 2.0};
  moe.layout.expert_group_nodes = kNodes;
  moe.nodes = {8, 9, 10, 11};
  return {dense, moe};
}

struct Transport {
  std::string name;
  int cores = 0;  // 0: RoCE, the NIC moves the bytes
};

struct Row {
  double all_reduce_s = 0, communication_s = 0, compute_s = 0, iteration_s = 0;
  double tokens_per_s = 0, gpu_utilisation = 0;
  double comm_cores_busy = 0, iteration_cores_busy = 0;  // TCP's; 0 for RoCE
  double sent_bytes_per_node = 0, all_reduce_sent_bytes_per_node = 0;
};

std::vector<Row> Run(const Transport& transport, double cpu_s_per_byte, double latency_s,
                     int all_reduce_calls, int alltoalls) {
  LeafSpineOptions o;
  o.racks = kRacks;
  o.nodes_per_rack = kNodesPerRack;
  o.nics_per_node = kNics;
  o.nic_bps = kNicBps;
  o.uplinks_per_tor = 8;
  o.oversubscription = 4;
  std::vector<TrainingJobSpec> jobs = Jobs();
  if (transport.cores > 0) {
    for (TrainingJobSpec& job : jobs) job.host_bps_per_node = 8 * transport.cores / cpu_s_per_byte;
  }
  absl::StatusOr<TrainingRun> run =
      TrainingRun::Create(BuildLeafSpine(o).value(), DcqcnParams(), jobs);
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
    std::exit(1);
  }
  absl::StatusOr<std::vector<JobReport>> reports = run->Run(kIterations);
  if (!reports.ok()) {
    std::fprintf(stderr, "%s\n", reports.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<Row> rows;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const TrainingJobSpec& job = jobs[j];
    const double n = job.nodes.size();
    Row row;
    for (const IterationReport& it : (*reports)[j].iterations) {
      for (const PhaseReport& p : it.phases) {
        if (p.kind == PhaseKind::kAllReduce) row.all_reduce_s += p.time_s / kIterations;
      }
      row.communication_s += it.communication_s / kIterations;
      row.compute_s += it.compute_s / kIterations;
    }
    // Bytes each node sends per iteration: the ring's 2(n − 1)/n · S, the all-to-all's
    // (g − 1)/g · A (the chunk to itself stays). The twin's own count must agree.
    row.all_reduce_sent_bytes_per_node =
        2 * (n - 1) / n * job.model.parameters * job.model.bytes_per_gradient_element;
    const double g = job.layout.expert_group_nodes;
    row.sent_bytes_per_node = row.all_reduce_sent_bytes_per_node +
                              (g > 0 ? (g - 1) / g * job.model.alltoall_bytes_per_node : 0);
    if (std::abs(row.sent_bytes_per_node * n / (*reports)[j].bytes_per_iteration - 1) > 1e-9) {
      std::fprintf(stderr, "%s: %g bytes per iteration on the twin, %g expected\n",
                   job.name.c_str(), (*reports)[j].bytes_per_iteration,
                   row.sent_bytes_per_node * n);
      std::exit(1);
    }
    if (transport.cores > 0) {
      // The jobs share no link, so adding the steps' latency after the run changes no
      // other flow's rate.
      const double ring_steps = 2 * (n - 1) * all_reduce_calls;
      row.all_reduce_s += ring_steps * latency_s;
      row.communication_s += (ring_steps + (g > 0 ? alltoalls : 0)) * latency_s;
    }
    row.iteration_s = row.compute_s + row.communication_s;
    row.tokens_per_s = job.model.tokens_per_iteration / row.iteration_s;
    row.gpu_utilisation = row.compute_s / row.iteration_s;
    if (transport.cores > 0) {
      const double cpu_s = row.sent_bytes_per_node * cpu_s_per_byte;
      row.comm_cores_busy = cpu_s / row.communication_s;
      row.iteration_cores_busy = cpu_s / row.iteration_s;
    }
    rows.push_back(row);
  }
  return rows;
}

int Main() {
  const double cpu_s_per_byte = absl::GetFlag(FLAGS_tcp_cpu_ns_per_byte) * 1e-9;
  const double latency_s = absl::GetFlag(FLAGS_tcp_step_latency_us) * 1e-6;
  const int all_reduce_calls = absl::GetFlag(FLAGS_all_reduce_calls_per_iteration);
  const int alltoalls = absl::GetFlag(FLAGS_alltoalls_per_iteration);
  std::vector<Transport> transports = {{"RoCE v2", 0}};
  for (absl::string_view field : absl::StrSplit(absl::GetFlag(FLAGS_comm_cores), ',')) {
    int cores = 0;
    if (!absl::SimpleAtoi(field, &cores) || cores < 1) {
      std::fprintf(stderr, "--comm_cores: '%s' is not a core count; accepted: 1, 2, ...\n",
                   std::string(field).c_str());
      return 1;
    }
    transports.push_back({absl::StrFormat("TCP, %d cores", cores), cores});
  }
  if (!(cpu_s_per_byte > 0) || !(latency_s >= 0) || all_reduce_calls < 1 || alltoalls < 0) {
    std::fprintf(stderr, "accepted: --tcp_cpu_ns_per_byte > 0, --tcp_step_latency_us >= 0, "
                         "--all_reduce_calls_per_iteration >= 1, --alltoalls_per_iteration "
                         ">= 0\n");
    return 1;
  }
  std::vector<std::vector<Row>> by_transport;
  for (const Transport& t : transports) {
    by_transport.push_back(Run(t, cpu_s_per_byte, latency_s, all_reduce_calls, alltoalls));
  }
  std::printf("TCP: %.3f ns of CPU per byte sent (sender and receiver together), %.1f µs per "
              "dependent step; a node pushes %.1f Gb/s per core. %d all-reduce call(s) and "
              "%d all-to-all calls (MoE) per iteration.\n\n",
              1e9 * cpu_s_per_byte, 1e6 * latency_s, 8 / cpu_s_per_byte / 1e9, all_reduce_calls,
              alltoalls);
  const std::vector<TrainingJobSpec> jobs = Jobs();
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Row& roce = by_transport[0][j];
    std::printf("%s, %zu nodes × %d NICs of %.0f Gb/s, compute %.1f ms per iteration, "
                "%.2f GB sent per node per iteration (all-reduce %.2f GB)\n\n",
                jobs[j].name.c_str(), jobs[j].nodes.size(), kNics, kNicBps / 1e9,
                1e3 * roce.compute_s, roce.sent_bytes_per_node / 1e9,
                roce.all_reduce_sent_bytes_per_node / 1e9);
    std::string header = "| | RoCE v2 |", rule = "|---|---:|";
    for (size_t t = 1; t < transports.size(); ++t) {
      header += absl::StrFormat(" %s | TCP / RoCE |", transports[t].name);
      rule += "---:|---:|";
    }
    std::printf("%s\n%s\n", header.c_str(), rule.c_str());
    auto line = [&](const char* name, auto value, int decimals) {
      std::string out = absl::StrFormat("| %s | %.*f |", name, decimals, value(roce));
      for (size_t t = 1; t < transports.size(); ++t) {
        const double v = value(by_transport[t][j]);
        out += absl::StrFormat(" %.*f | %s |", decimals, v,
                               value(roce) > 0 ? absl::StrFormat("%.2f×", v / value(roce))
                                               : std::string("—"));
      }
      std::printf("%s\n", out.c_str());
    };
    line("all-reduce time (ms)", [](const Row& r) { return 1e3 * r.all_reduce_s; }, 1);
    line("all communication (ms)", [](const Row& r) { return 1e3 * r.communication_s; }, 1);
    line("tokens/s", [](const Row& r) { return r.tokens_per_s; }, 0);
    line("GPU utilisation (compute / iteration, %)",
         [](const Row& r) { return 100 * r.gpu_utilisation; }, 1);
    line("CPU load of communication: cores busy per node while communicating",
         [](const Row& r) { return r.comm_cores_busy; }, 1);
    line("CPU load of communication: cores busy per node over the iteration",
         [](const Row& r) { return r.iteration_cores_busy; }, 2);
    std::printf("\nCores a TCP host would need to match RoCE's communication time: %.0f "
                "(all-reduce alone: %.0f).\n\n",
                roce.sent_bytes_per_node * cpu_s_per_byte / roce.communication_s,
                roce.all_reduce_sent_bytes_per_node * cpu_s_per_byte / roce.all_reduce_s);
  }
  return 0;
}

}  // namespace
}  // namespace weft::sim

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::sim::Main();
}
