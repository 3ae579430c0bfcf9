// The motivating table of issue 20, measured on the fabric twin: the same training jobs
// placed one after another on a fragmented cluster by Weft's engine (placement/engine.h),
// first fit in hostname order, tree best fit and random (bench/placement/baselines.h),
// then run together on a sim::Twin (sim/twin.h) next to a background job on the nodes
// already taken. Per job: racks used, the share of its bytes crossing ToR uplinks,
// all-reduce time, all communication (all-to-all, send/recv and all-reduce), iteration
// time, tokens/s (iterations 1-3 averaged) and its PFC pause share: the RoCE-priority
// (3) rx pause time of the job's NICs (rx_prio3_pause_duration, the time their ToR held
// them back) over those three iterations, averaged over its NICs. Run it optimized:
//   bazel run -c opt //bench/sim:placement_on_twin
//
// Cluster: 4 racks (a-d) × 8 nodes × 8 NICs of 400 Gb/s, one pod; each ToR has 8 uplinks,
// one to each of 8 spines, oversubscribed 2:1 and 4:1. Taken before the jobs arrive
// (fixed, written below): a 5, b 3, c 2, d 4 nodes, scattered; they run the background
// job, an all-to-all among all 14 (2 GB per node per step, 0.2 s compute between steps),
// which loads every uplink.
//
// Scenarios: the fabric healthy, and a flaky NIC in the busiest rack, a-01's mlx5_0,
// storming PFC pauses at 0.5 (TwinFaultKind::kPfcStorm) from before the jobs arrive.
// Weft's engine is given the snapshot the controller would build (controller/placement/
// cluster_snapshot.h): each node's congestion from the twin's counters over 2 s of the
// background job alone (with the storm in the second scenario), the highest of its NICs'
// max(pause share / 0.5, ECN-marked share / 0.1), and a node whose NIC is paused half the
// time or more not healthy (the pfc_pause_storm rule). The baselines ignore congestion.
//
// Jobs (bench/sim/job_models.h), in arrival order, 4 nodes each:
//   dense-7b ring   7e9 parameters, bf16 gradients, ring all-reduce
//   dense-7b tree   the same with NCCL's double binary tree
//   moe-16b a2a     DeepSeek-MoE-16B-like, all-to-all in one expert group of 4 nodes
//   dense-13b pipe  13e9 parameters, 2 pipeline stages × 2 data-parallel
// Random is the mean over 10 seeds.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/placement/baselines.h"
#include "bench/sim/job_models.h"
#include "bench/sim/or_die.h"
#include "placement/engine.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"
#include "sim/training_job.h"
#include "sim/twin.h"

namespace weft::sim {
namespace {

constexpr int kRacks = 4, kNodesPerRack = 8, kNics = 8;
constexpr int kGpus = bench::kGpusPerNode;
constexpr double kNicBps = 400e9;
constexpr int kIterations = 3;
constexpr int kRandomSeeds = 10;
constexpr double kStepS = 0.01;       // Advance step while collecting iterations
constexpr double kSnapshotS = 2;      // background alone before the snapshot is read
constexpr double kGiveUpS = 600;      // simulated; a job this slow is a bug in the bench
constexpr int kRocePriority = 3;
// controller::CongestionScale's defaults (the health rules' thresholds).
constexpr double kPauseScale = 0.5, kEcnScale = 0.1, kEcnMinRcvPacketsPerS = 1000;

const std::vector<std::string> kTaken = {"a-01", "a-02", "a-04", "a-05", "a-07",
                                         "b-02", "b-05", "b-07", "c-03", "c-06",
                                         "d-01", "d-04", "d-05", "d-08"};
constexpr const char* kStormNode = "a-01";
constexpr const char* kStormNic = "mlx5_0";
constexpr double kStormShare = 0.5;

using bench::OrDie;

struct JobType {
  std::string name;
  int nodes = 4;
  TrainingJobSpec spec;  // nodes left empty: the placer fills them
  weft::v1::PlacementRequest request;
};

std::vector<JobType> Jobs() {
  const int n = 4;
  std::vector<JobType> jobs;
  for (auto [name, algorithm] :
       {std::pair{"dense-7b ring", AllReduceAlgorithm::kRing},
        std::pair{"dense-7b tree", AllReduceAlgorithm::kDoubleBinaryTree}}) {
    JobType t;
    t.name = name;
    t.spec = bench::DenseJob(name, 7e9, algorithm, n);
    t.request = placement::RingJob(name, n, static_cast<uint64_t>(7e9 * 2 / kGpus));
    jobs.push_back(t);
  }
  {
    JobType t;
    t.name = "moe-16b a2a";
    t.spec = bench::MoeJob(t.name, n, /*expert_group_nodes=*/4);
    t.request.set_job_id(t.name);
    t.request.mutable_parallelism()->set_tensor(kGpus);
    t.request.mutable_parallelism()->set_data(n);
    t.request.mutable_parallelism()->set_expert(4);
    t.request.set_alltoall_bytes(static_cast<uint64_t>(bench::MoeAllToAllBytesPerNode() / kGpus));
    t.request.set_gradient_bytes(static_cast<uint64_t>(1.4e9 * 2 / kGpus));
    jobs.push_back(t);
  }
  {
    JobType t;
    t.name = "dense-13b pipe";
    t.spec = bench::PipelineJob(t.name, 13e9, /*hidden=*/5120, n, /*stages=*/2);
    t.request.set_job_id(t.name);
    t.request.mutable_parallelism()->set_tensor(kGpus);
    t.request.mutable_parallelism()->set_pipeline(2);
    t.request.mutable_parallelism()->set_data(2);
    t.request.set_activation_bytes(
        static_cast<uint64_t>(bench::PipelineActivationBytesPerNode(5120) / kGpus));
    t.request.set_gradient_bytes(static_cast<uint64_t>(13e9 * 2 / 2 / kGpus));
    jobs.push_back(t);
  }
  return jobs;
}

struct Scenario {
  double oversubscription = 2;
  bool storm = false;
};

struct Row {
  double racks = 0, uplink_share = 0, all_reduce_s = 0, communication_s = 0, iteration_s = 0,
         tokens_per_s = 0, pause_share = 0,
         pause_share_communicating = 0;
};

enum class Placer { kWeft, kFirstFit, kTreeBestFit, kRandom };

// The cluster as a named twin topology: racks a-d, nodes named as placement/test_clusters
// names them, so both sides find a node by name.
TwinTopology Topology(const placement::Topology& topo, double oversubscription) {
  std::vector<RackSpec> racks;
  for (const char* rack : {"a", "b", "c", "d"}) racks.push_back({rack, "p1", {}});
  for (const placement::TopoNode& node : topo.nodes()) {
    racks[node.rack].nodes.push_back(node.name);
  }
  TwinFabricOptions o;
  o.nics_per_node = kNics;
  o.nic_bps = kNicBps;
  o.uplinks_per_tor = 8;
  o.oversubscription = oversubscription;
  return OrDie(BuildTwinTopology(racks, o));
}

TrainingJobSpec Background(const Twin& twin) {
  TrainingJobSpec background;
  background.name = "background";
  background.model = {.parameters = 1e9,
                      .tokens_per_iteration = 1,
                      .compute_s_per_iteration = 0.2,
                      .alltoall_bytes_per_node = 2e9};
  for (const std::string& name : kTaken) background.nodes.push_back(OrDie(twin.NodeByName(name)));
  background.layout.expert_group_nodes = static_cast<int>(background.nodes.size());
  return background;
}

// A twin of the cluster with the storm injected (in the storm scenario) and no job yet.
Twin MakeTwin(const placement::Topology& topo, const Scenario& scenario) {
  Twin twin = OrDie(Twin::Create(Topology(topo, scenario.oversubscription), DcqcnParams()));
  if (scenario.storm) {
    TwinFault storm{.kind = TwinFaultKind::kPfcStorm, .value = kStormShare};
    storm.node = OrDie(twin.NodeByName(kStormNode));
    storm.nic = OrDie(twin.NicByDevice(storm.node, kStormNic));
    OrDie(twin.InjectFault(storm));
  }
  return twin;
}

uint64_t Counter(const std::map<std::string, uint64_t>& counters, const std::string& name) {
  auto it = counters.find(name);
  return it == counters.end() ? 0 : it->second;
}

// The snapshot the controller would hand the engine after kSnapshotS of the background
// job alone on the twin (cluster_snapshot.h's NodeCongestion, computed here from the
// twin's counters over the whole window instead of from the agents' samples).
weft::v1::ClusterSnapshot ObservedSnapshot(const placement::Topology& topo,
                                           const Scenario& scenario) {
  std::vector<placement::RackSpec> racks;
  for (const char* name : {"a", "b", "c", "d"}) racks.push_back({name, "p1", kNodesPerRack});
  weft::v1::ClusterSnapshot snapshot = placement::MakeCluster(racks, kGpus, kNics);
  Twin twin = MakeTwin(topo, scenario);
  OrDie(twin.StartJob(Background(twin)));
  OrDie(twin.Advance(kSnapshotS));
  const std::string prio = absl::StrCat("prio", kRocePriority);
  for (weft::v1::SnapshotNode& node : *snapshot.mutable_nodes()) {
    const int id = OrDie(twin.NodeByName(node.name()));
    double score = 0, worst_pause = 0;
    for (int nic = 0; nic < static_cast<int>(twin.topology().fabric.nics().size()); ++nic) {
      if (twin.topology().fabric.nics()[nic].node != id) continue;
      const TwinNicReading r = OrDie(twin.ReadNic(nic));
      const double pause =
          std::max(Counter(r.ethtool, absl::StrCat("rx_", prio, "_pause_duration")),
                   Counter(r.ethtool, absl::StrCat("tx_", prio, "_pause_duration"))) /
          (1e6 * kSnapshotS);
      const double rcv_per_s = Counter(r.port_counters, "port_rcv_packets") / kSnapshotS;
      const double marked_per_s =
          Counter(r.hw_counters, "np_ecn_marked_roce_packets") / kSnapshotS;
      double nic_score = pause / kPauseScale;
      if (rcv_per_s >= kEcnMinRcvPacketsPerS) {
        nic_score = std::max(nic_score, marked_per_s / rcv_per_s / kEcnScale);
      }
      score = std::max(score, std::min(1.0, nic_score));
      worst_pause = std::max(worst_pause, pause);
    }
    node.set_congestion(score);
    node.set_healthy(worst_pause < kPauseScale);
  }
  return snapshot;
}

// Places every job in order; nodes (placement topology ids) in rank order per job.
std::vector<std::vector<int>> PlaceAll(Placer placer, const placement::Topology& topo,
                                       const placement::Topology& observed,
                                       const std::vector<JobType>& jobs, uint64_t seed) {
  std::vector<char> taken(topo.nodes().size(), 0);
  std::vector<std::string> taken_names = kTaken;
  for (const std::string& name : kTaken) taken[*topo.FindNode(name)] = 1;
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int>> out;
  for (const JobType& job : jobs) {
    std::vector<int> nodes;
    if (placer == Placer::kWeft) {
      const weft::v1::PlacementResponse placed = OrDie(
          placement::Place(observed, placement::OccupancyOf(taken_names), job.request));
      for (const std::string& name : placed.ring_order()) nodes.push_back(*topo.FindNode(name));
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

std::vector<Row> RunOnTwin(const Scenario& scenario, const placement::Topology& topo,
                           const std::vector<JobType>& types,
                           const std::vector<std::vector<int>>& placed) {
  Twin twin = MakeTwin(topo, scenario);
  std::vector<TrainingJobSpec> specs;
  for (size_t j = 0; j < types.size(); ++j) {
    specs.push_back(types[j].spec);
    for (int id : placed[j]) specs.back().nodes.push_back(OrDie(twin.NodeByName(topo.node(id).name)));
  }
  // The bytes crossing ToR uplinks: TrainingRun routes every phase of every job (its
  // timings are not used: it stops each job after its last iteration, the twin's jobs
  // iterate on, so the others' later iterations run under the load they have in a cluster).
  std::vector<TrainingJobSpec> routed = specs;
  routed.push_back(Background(twin));
  TrainingRun run = OrDie(TrainingRun::Create(twin.topology().fabric, DcqcnParams(), routed));
  const std::vector<JobReport> routes = OrDie(run.Run(1));

  // Started in TrainingRun's order (the placed jobs, then the background), so that every
  // flow takes the same UDP source port, hence the same ECMP path, as in TrainingRun.
  const double start_s = twin.time_s();
  for (const TrainingJobSpec& spec : specs) OrDie(twin.StartJob(spec));
  OrDie(twin.StartJob(Background(twin)));
  std::vector<Row> rows(types.size());
  std::vector<int> seen(types.size(), 0);
  std::vector<bool> done(types.size(), false);
  std::vector<double> pause_start_us(types.size(), 0);
  auto pause_us = [&](size_t j) {
    double us = 0;
    for (const int node : specs[j].nodes) {
      for (int nic = 0; nic < static_cast<int>(twin.topology().fabric.nics().size()); ++nic) {
        if (twin.topology().fabric.nics()[nic].node != node) continue;
        const TwinNicReading r = OrDie(twin.ReadNic(nic));
        us += Counter(r.ethtool, absl::StrCat("rx_prio", kRocePriority, "_pause_duration"));
      }
    }
    return us / (specs[j].nodes.size() * kNics);
  };
  for (size_t j = 0; j < types.size(); ++j) pause_start_us[j] = pause_us(j);
  while (std::count(done.begin(), done.end(), true) < static_cast<long>(types.size())) {
    if (twin.time_s() - start_s > kGiveUpS) {
      std::fprintf(stderr, "jobs did not finish %d iterations in %.0f s\n", kIterations, kGiveUpS);
      std::exit(1);
    }
    OrDie(twin.Advance(kStepS));
    const std::vector<TwinJobStatus> status = twin.jobs();
    for (size_t j = 0; j < types.size(); ++j) {
      const TwinJobStatus& job = status[j];
      if (done[j] || job.iterations_done == seen[j]) continue;
      if (job.iterations_done != seen[j] + 1) {
        std::fprintf(stderr, "%s: more than one iteration in %.2f s\n", job.name.c_str(), kStepS);
        std::exit(1);
      }
      seen[j] = job.iterations_done;
      Row& row = rows[j];
      for (const PhaseReport& p : job.last->phases) {
        if (p.kind == PhaseKind::kAllReduce) row.all_reduce_s += p.time_s / kIterations;
      }
      row.communication_s += job.last->communication_s / kIterations;
      row.iteration_s += job.last->iteration_s / kIterations;
      row.tokens_per_s += job.last->tokens_per_s / kIterations;
      if (seen[j] == kIterations) {
        done[j] = true;
        const double paused_s = (pause_us(j) - pause_start_us[j]) / 1e6;
        row.pause_share = paused_s / (twin.time_s() - start_s);
        row.pause_share_communicating = paused_s / (kIterations * row.communication_s);
      }
    }
  }
  for (size_t j = 0; j < types.size(); ++j) {
    std::vector<bool> rack_used(kRacks, false);
    for (int id : placed[j]) rack_used[topo.node(id).rack] = true;
    for (bool used : rack_used) rows[j].racks += used;
    rows[j].uplink_share = routes[j].uplink_byte_share;
  }
  return rows;
}

void Main() {
  std::vector<placement::RackSpec> racks;
  for (const char* name : {"a", "b", "c", "d"}) racks.push_back({name, "p1", kNodesPerRack});
  const placement::Topology topo =
      OrDie(placement::Topology::Build(placement::MakeCluster(racks, kGpus, kNics)));
  std::vector<JobType> types = Jobs();
  const std::vector<std::pair<Placer, std::string>> placers = {
      {Placer::kWeft, "weft engine"},
      {Placer::kFirstFit, "first fit"},
      {Placer::kTreeBestFit, "tree best fit"},
      {Placer::kRandom, "random (10 seeds)"}};
  for (const Scenario& scenario : {Scenario{2, false}, Scenario{4, false}, Scenario{2, true},
                                   Scenario{4, true}}) {
    const placement::Topology observed =
        OrDie(placement::Topology::Build(ObservedSnapshot(topo, scenario)));
    std::printf("\n%.0f:1 ToR uplinks%s\n", scenario.oversubscription,
                scenario.storm ? absl::StrFormat(", %s/%s storming PFC pauses at %.1f",
                                                 kStormNode, kStormNic, kStormShare)
                                     .c_str()
                               : "");
    std::printf("congestion Weft's engine sees (node: score, rack mean):");
    for (const placement::TopoNode& node : observed.nodes()) {
      if (node.congestion > 0 || !node.healthy) {
        std::printf(" %s %.2f%s", node.name.c_str(), node.congestion, node.healthy ? "" : " (not healthy)");
      }
    }
    for (const placement::TopoRack& rack : observed.racks()) {
      std::printf("; rack %s %.2f", rack.name.c_str(), rack.congestion);
    }
    std::printf("\n\n| job | placer | racks | uplink share | all-reduce ms | vs first fit | "
                "all communication ms | iteration ms | tokens/s | vs first fit | "
                "PFC pause share: run, communicating |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::vector<Row>> by_placer;
    for (const auto& [placer, name] : placers) {
      const int seeds = placer == Placer::kRandom ? kRandomSeeds : 1;
      std::vector<Row> mean(types.size());
      for (int seed = 1; seed <= seeds; ++seed) {
        const std::vector<Row> rows =
            RunOnTwin(scenario, topo, types, PlaceAll(placer, topo, observed, types, seed));
        for (size_t j = 0; j < rows.size(); ++j) {
          mean[j].racks += rows[j].racks / seeds;
          mean[j].uplink_share += rows[j].uplink_share / seeds;
          mean[j].all_reduce_s += rows[j].all_reduce_s / seeds;
          mean[j].communication_s += rows[j].communication_s / seeds;
          mean[j].iteration_s += rows[j].iteration_s / seeds;
          mean[j].tokens_per_s += rows[j].tokens_per_s / seeds;
          mean[j].pause_share += rows[j].pause_share / seeds;
          mean[j].pause_share_communicating += rows[j].pause_share_communicating / seeds;
        }
      }
      by_placer.push_back(mean);
    }

    for (size_t j = 0; j < types.size(); ++j) {
      const Row& ff = by_placer[1][j];
      for (size_t p = 0; p < placers.size(); ++p) {
        const Row& r = by_placer[p][j];
        std::printf(
            "| %s | %s | %.1f | %.0f %% | %.1f | %.2f× | %.1f | %.1f | %.0f | %.2f× | %.1f %%, %.1f %% |\n",
            p == 0 ? types[j].name.c_str() : "", placers[p].second.c_str(), r.racks,
            100 * r.uplink_share, 1e3 * r.all_reduce_s,
            ff.all_reduce_s > 0 ? r.all_reduce_s / ff.all_reduce_s : 0, 1e3 * r.communication_s,
            1e3 * r.iteration_s, r.tokens_per_s, r.tokens_per_s / ff.tokens_per_s,
            100 * r.pause_share, 100 * r.pause_share_communicating);
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
