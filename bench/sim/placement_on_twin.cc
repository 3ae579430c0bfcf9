// The motivating table of issue 20, measured on the fabric twin: the same training jobs
// placed one after another on a fragmented cluster by Weft's engine (placement/engine.h),
// first fit in hostname order, tree best fit and random (bench/placement/baselines.h),
// then run together on the twin (sim/training_job.h) next to a background job on the
// nodes already taken. Per job: racks used, the share of its bytes crossing ToR uplinks,
// all-reduce time, all communication (all-to-all, send/recv and all-reduce), iteration
// time, tokens/s; iterations 1-3 averaged. Run it optimized:
//   bazel run -c opt //bench/sim:placement_on_twin
//
// Cluster: 4 racks (a-d) × 8 nodes × 8 NICs of 400 Gb/s, one pod; each ToR has 8 uplinks,
// one to each of 8 spines, oversubscribed 2:1 and 4:1 (both printed). Taken before the
// jobs arrive (fixed, written below): a 5, b 3, c 2, d 4 nodes, scattered; they run the
// background job, an all-to-all among all 14 (2 GB per node per step, 0.2 s compute
// between steps), which loads every uplink.
//
// Jobs, in arrival order, 4 nodes each (8 H100s per node; compute per iteration =
// 6 · active parameters · tokens / (GPUs · 989 TFLOP/s · 40 % MFU); 4096-token sequences,
// one per GPU per iteration):
//   dense-7b ring   7e9 parameters, bf16 gradients, ring all-reduce
//   dense-7b tree   the same with NCCL's double binary tree
//   moe-16b a2a     DeepSeek-MoE-16B-like: 2.8e9 active, 1.4e9 all-reduced (non-routed),
//                   all-to-all in one expert group of 4 nodes: 27 MoE layers × 4
//                   (dispatch, combine; forward, backward) × 32768 tokens per node × top-6
//                   × hidden 2048 × 2 bytes = 87 GB per node per iteration
//   dense-13b pipe  13e9 parameters, 2 pipeline stages × 2 data-parallel: 16 micro-batches
//                   per replica, 4096 × 5120 × 2 bytes each way per micro-batch
// Random is the mean over 10 seeds.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/placement/baselines.h"
#include "placement/engine.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"
#include "sim/training_job.h"

namespace weft::sim {
namespace {

constexpr int kRacks = 4, kNodesPerRack = 8, kGpus = 8, kNics = 8;
constexpr double kNicBps = 400e9;
constexpr double kGpuFlops = 989e12 * 0.40;
constexpr double kTokensPerNode = kGpus * 4096.0;
constexpr int kIterations = 3;
constexpr int kRandomSeeds = 10;

const std::vector<std::string> kTaken = {"a-01", "a-02", "a-04", "a-05", "a-07",
                                         "b-02", "b-05", "b-07", "c-03", "c-06",
                                         "d-01", "d-04", "d-05", "d-08"};

struct JobType {
  std::string name;
  int nodes = 4;
  TrainingJobSpec spec;  // nodes left empty: the placer fills them
  weft::v1::PlacementRequest request;
};

double ComputeSeconds(double active_parameters, int nodes) {
  return 6 * active_parameters * kTokensPerNode * nodes / (nodes * kGpus * kGpuFlops);
}

std::vector<JobType> Jobs() {
  const int n = 4;
  std::vector<JobType> jobs;
  auto dense = [&](std::string name, AllReduceAlgorithm algorithm) {
    JobType t;
    t.name = name;
    t.spec.name = name;
    t.spec.model = {.parameters = 7e9,
                    .bytes_per_gradient_element = 2,
                    .tokens_per_iteration = kTokensPerNode * n,
                    .compute_s_per_iteration = ComputeSeconds(7e9, n)};
    t.spec.layout.all_reduce = algorithm;
    t.request = placement::RingJob(name, n, static_cast<uint64_t>(7e9 * 2 / kGpus));
    return t;
  };
  jobs.push_back(dense("dense-7b ring", AllReduceAlgorithm::kRing));
  jobs.push_back(dense("dense-7b tree", AllReduceAlgorithm::kDoubleBinaryTree));
  {
    JobType t;
    t.name = t.spec.name = "moe-16b a2a";
    const double a2a = 27 * 4 * kTokensPerNode * 6 * 2048 * 2.0;
    t.spec.model = {.parameters = 1.4e9,
                    .bytes_per_gradient_element = 2,
                    .tokens_per_iteration = kTokensPerNode * n,
                    .compute_s_per_iteration = ComputeSeconds(2.8e9, n),
                    .alltoall_bytes_per_node = a2a};
    t.spec.layout.expert_group_nodes = 4;
    t.request.set_job_id(t.name);
    t.request.mutable_parallelism()->set_tensor(kGpus);
    t.request.mutable_parallelism()->set_data(n);
    t.request.mutable_parallelism()->set_expert(4);
    t.request.set_alltoall_bytes(static_cast<uint64_t>(a2a / kGpus));
    t.request.set_gradient_bytes(static_cast<uint64_t>(1.4e9 * 2 / kGpus));
    jobs.push_back(t);
  }
  {
    JobType t;
    t.name = t.spec.name = "dense-13b pipe";
    const double activations = 16 * 4096 * 5120 * 2.0;
    t.spec.model = {.parameters = 13e9,
                    .bytes_per_gradient_element = 2,
                    .tokens_per_iteration = kTokensPerNode * n,
                    .compute_s_per_iteration = ComputeSeconds(13e9, n),
                    .activation_bytes_per_node = activations};
    t.spec.layout.pipeline_stages = 2;
    t.request.set_job_id(t.name);
    t.request.mutable_parallelism()->set_tensor(kGpus);
    t.request.mutable_parallelism()->set_pipeline(2);
    t.request.mutable_parallelism()->set_data(2);
    t.request.set_activation_bytes(static_cast<uint64_t>(activations / kGpus));
    t.request.set_gradient_bytes(static_cast<uint64_t>(13e9 * 2 / 2 / kGpus));
    jobs.push_back(t);
  }
  return jobs;
}

struct Row {
  double racks = 0, uplink_share = 0, all_reduce_s = 0, communication_s = 0, iteration_s = 0, tokens_per_s = 0;
};

enum class Placer { kWeft, kFirstFit, kTreeBestFit, kRandom };

// Places every job in order; nodes in rank order per job, or an error.
std::vector<std::vector<int>> PlaceAll(Placer placer, const placement::Topology& topo,
                                       const std::vector<JobType>& jobs, uint64_t seed) {
  std::vector<char> taken(topo.nodes().size(), 0);
  std::vector<std::string> taken_names = kTaken;
  for (const std::string& name : kTaken) taken[*topo.FindNode(name)] = 1;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int>> out;
  for (const JobType& job : jobs) {
    std::vector<int> nodes;
    if (placer == Placer::kWeft) {
      absl::StatusOr<weft::v1::PlacementResponse> placed =
          placement::Place(topo, placement::OccupancyOf(taken_names), job.request);
      if (!placed.ok()) {
        std::fprintf(stderr, "%s: %s\n", job.name.c_str(), placed.status().ToString().c_str());
        std::exit(1);
      }
      for (const std::string& name : placed->ring_order()) nodes.push_back(*topo.FindNode(name));
    } else {
      const bench::Baseline b = placer == Placer::kFirstFit     ? bench::Baseline::kFirstFit
                                : placer == Placer::kTreeBestFit ? bench::Baseline::kTreeBestFit
                                                                 : bench::Baseline::kRandom;
      nodes = bench::PlaceBaseline(b, topo, taken, job.nodes, rng);
      if (nodes.empty()) {
        std::fprintf(stderr, "%s: fewer than %d nodes free\n", job.name.c_str(), job.nodes);
        std::exit(1);
      }
    }
    for (int id : nodes) {
      taken[id] = 1;
      taken_names.push_back(topo.node(id).name);
    }
    out.push_back(nodes);
  }
  return out;
}

std::vector<Row> RunOnTwin(double oversubscription, const placement::Topology& topo,
                           const std::vector<JobType>& types,
                           const std::vector<std::vector<int>>& placed) {
  LeafSpineOptions o;
  o.racks = kRacks;
  o.nodes_per_rack = kNodesPerRack;
  o.nics_per_node = kNics;
  o.nic_bps = kNicBps;
  o.uplinks_per_tor = 8;
  o.oversubscription = oversubscription;
  std::vector<TrainingJobSpec> specs;
  for (size_t j = 0; j < types.size(); ++j) {
    specs.push_back(types[j].spec);
    specs.back().nodes = placed[j];
  }
  TrainingJobSpec background;
  background.name = "background";
  background.model = {.parameters = 1e9,
                      .tokens_per_iteration = 1,
                      .compute_s_per_iteration = 0.2,
                      .alltoall_bytes_per_node = 2e9};
  for (const std::string& name : kTaken) background.nodes.push_back(*topo.FindNode(name));
  background.layout.expert_group_nodes = static_cast<int>(background.nodes.size());
  specs.push_back(background);
  absl::StatusOr<TrainingRun> run =
      TrainingRun::Create(BuildLeafSpine(o).value(), DcqcnParams(), specs);
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<JobReport> reports = run->Run(kIterations).value();
  std::vector<Row> rows;
  for (size_t j = 0; j < types.size(); ++j) {
    Row row;
    std::vector<bool> rack_used(kRacks, false);
    for (int id : placed[j]) rack_used[topo.node(id).rack] = true;
    for (bool used : rack_used) row.racks += used;
    row.uplink_share = reports[j].uplink_byte_share;
    for (const IterationReport& it : reports[j].iterations) {
      for (const PhaseReport& p : it.phases) {
        if (p.kind == PhaseKind::kAllReduce) row.all_reduce_s += p.time_s / kIterations;
      }
      row.communication_s += it.communication_s / kIterations;
      row.iteration_s += it.iteration_s / kIterations;
      row.tokens_per_s += it.tokens_per_s / kIterations;
    }
    rows.push_back(row);
  }
  return rows;
}

void Main() {
  std::vector<placement::RackSpec> racks;
  for (const char* name : {"a", "b", "c", "d"}) racks.push_back({name, "p1", kNodesPerRack});
  const weft::v1::ClusterSnapshot snapshot = placement::MakeCluster(racks, kGpus, kNics);
  const placement::Topology topo = placement::Topology::Build(snapshot).value();
  std::vector<JobType> types = Jobs();
  const std::vector<std::pair<Placer, std::string>> placers = {
      {Placer::kWeft, "weft engine"},
      {Placer::kFirstFit, "first fit"},
      {Placer::kTreeBestFit, "tree best fit"},
      {Placer::kRandom, "random (10 seeds)"}};
  for (double oversubscription : {2.0, 4.0}) {
    std::printf("\n%.0f:1 ToR uplinks\n\n", oversubscription);
    std::printf("| job | placer | racks | uplink share | all-reduce ms | vs first fit | "
                "all communication ms | iteration ms | tokens/s | vs first fit |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::vector<Row>> by_placer;
    for (const auto& [placer, name] : placers) {
      const int seeds = placer == Placer::kRandom ? kRandomSeeds : 1;
      std::vector<Row> mean(types.size());
      for (int seed = 1; seed <= seeds; ++seed) {
        const std::vector<Row> rows =
            RunOnTwin(oversubscription, topo, types, PlaceAll(placer, topo, types, seed));
        for (size_t j = 0; j < rows.size(); ++j) {
          mean[j].racks += rows[j].racks / seeds;
          mean[j].uplink_share += rows[j].uplink_share / seeds;
          mean[j].all_reduce_s += rows[j].all_reduce_s / seeds;
          mean[j].communication_s += rows[j].communication_s / seeds;
          mean[j].iteration_s += rows[j].iteration_s / seeds;
          mean[j].tokens_per_s += rows[j].tokens_per_s / seeds;
        }
      }
      by_placer.push_back(mean);
    }
    for (size_t j = 0; j < types.size(); ++j) {
      const Row& ff = by_placer[1][j];
      for (size_t p = 0; p < placers.size(); ++p) {
        const Row& r = by_placer[p][j];
        std::printf("| %s | %s | %.1f | %.0f %% | %.1f | %.2f× | %.1f | %.1f | %.0f | %.2f× |\n",
                    p == 0 ? types[j].name.c_str() : "", placers[p].second.c_str(), r.racks,
                    100 * r.uplink_share, 1e3 * r.all_reduce_s,
                    ff.all_reduce_s > 0 ? r.all_reduce_s / ff.all_reduce_s : 0,
                    1e3 * r.communication_s, 1e3 * r.iteration_s, r.tokens_per_s, r.tokens_per_s / ff.tokens_per_s);
      }
    }
  }
}

}  // namespace
}  // namespace weft::sim

int main() {
  weft::sim::Main();
  return 0;
}
