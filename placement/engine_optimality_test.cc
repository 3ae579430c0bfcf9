// The engine against exhaustive search (placement/exhaustive_search.h) on random small
// clusters: 3-4 racks of 1-4 nodes in 1-2 pods, with random unhealthy, drained, taken
// and congested nodes, random constraints, and random jobs. On every instance the
// engine must reach the optimal number of racks, then pods, then cross-rack bytes —
// or refuse exactly when no placement exists.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "placement/engine.h"
#include "placement/exhaustive_search.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"

namespace weft::placement {
namespace {

using weft::v1::ClusterSnapshot;
using weft::v1::Occupancy;
using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

struct Instance {
  ClusterSnapshot snapshot;
  Occupancy occupancy;
  int eligible = 0;
  int gpus = 1;
};

std::vector<int> Divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

Instance RandomInstance(std::mt19937& rng) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  Instance inst;
  inst.gpus = uniform(1, 2);
  const int rack_count = uniform(3, 4);
  const int pod_count = uniform(1, 2);
  std::vector<RackSpec> racks;
  for (int r = 0; r < rack_count; ++r) {
    racks.push_back(RackSpec{std::string(1, static_cast<char>('a' + r)),
                             absl::StrCat("p", uniform(1, pod_count)), uniform(1, 4),
                             uniform(0, 6) / 10.0});
  }
  inst.snapshot = MakeCluster(racks, inst.gpus, inst.gpus);
  std::vector<std::string> taken;
  for (auto& node : *inst.snapshot.mutable_nodes()) {
    if (chance(0.3)) node.set_congestion(uniform(0, 9) / 10.0);
    if (chance(0.1)) {
      node.set_healthy(false);
    } else if (chance(0.1)) {
      node.set_drained(true);
    } else if (chance(0.15)) {
      taken.push_back(node.name());
    } else {
      ++inst.eligible;
    }
  }
  inst.occupancy = OccupancyOf(taken);
  return inst;
}

void RandomConstraints(std::mt19937& rng, PlacementRequest* request) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  if (uniform(0, 4) == 0) request->mutable_constraints()->set_max_racks(uniform(1, 3));
  if (uniform(0, 4) == 0) request->mutable_constraints()->set_single_pod(true);
}

// Compares one instance; returns a description of the mismatch, or "" when they agree.
std::string Compare(const Instance& inst, const PlacementRequest& request) {
  const Topology topo = *Topology::Build(inst.snapshot);
  const absl::StatusOr<Optimum> best = ExhaustiveOptimum(topo, inst.occupancy, request);
  const absl::StatusOr<PlacementResponse> placed = Place(topo, inst.occupancy, request);
  std::string where = absl::StrCat("request ", request.ShortDebugString(), "\nfree:");
  {
    const Topology free_topo = *Topology::Build(inst.snapshot);
    std::vector<std::string> taken;
    for (const auto& e : inst.occupancy.entries()) taken.push_back(e.node());
    for (const TopoRack& rack : free_topo.racks()) {
      int free = 0;
      for (NodeId id : rack.nodes) {
        const TopoNode& n = free_topo.node(id);
        free += n.healthy && !n.drained &&
                std::find(taken.begin(), taken.end(), n.name) == taken.end();
      }
      absl::StrAppend(&where, " ", rack.name, "(", free_topo.pod(rack.pod).name, ", ", free,
                      " free, congestion ", rack.congestion, ")");
    }
  }
  if (!best.ok()) {
    if (placed.ok()) return absl::StrCat("engine placed what search could not; ", where);
    const absl::StatusCode code = placed.status().code();
    if (code != absl::StatusCode::kResourceExhausted &&
        code != absl::StatusCode::kFailedPrecondition) {
      return absl::StrCat("unexpected refusal ", placed.status().ToString(), "; ", where);
    }
    return "";
  }
  if (!placed.ok()) {
    return absl::StrCat("engine refused ", placed.status().ToString(), "; ", where);
  }
  if (static_cast<int>(placed->racks_used()) != best->racks ||
      static_cast<int>(placed->pods_used()) != best->pods ||
      placed->predicted_cross_rack_bytes() != best->cross_rack_bytes) {
    return absl::StrCat("engine racks/pods/cross-rack ", placed->racks_used(), "/",
                        placed->pods_used(), "/", placed->predicted_cross_rack_bytes(),
                        ", optimum ", best->racks, "/", best->pods, "/",
                        best->cross_rack_bytes, "; ", where);
  }
  return "";
}

TEST(EngineOptimalityTest, FlatPatternsMatchExhaustiveSearch) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int compared = 0, placed = 0;
  for (int i = 0; i < 2000; ++i) {
    const Instance inst = RandomInstance(rng);
    if (inst.eligible == 0) continue;
    PlacementRequest request;
    request.set_job_id(absl::StrCat("job-", i));
    request.set_node_count(uniform(1, std::min(inst.eligible, 7)));
    request.set_gpus_per_node(inst.gpus);
    switch (uniform(0, 2)) {
      case 0:
        request.set_pattern(weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE);
        request.set_gradient_bytes(uniform(1, 1 << 20));
        break;
      case 1:
        request.set_pattern(weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL);
        request.set_alltoall_bytes(uniform(1, 1 << 20));
        if (uniform(0, 1)) request.set_gradient_bytes(uniform(1, 1 << 20));
        break;
      default:
        request.set_pattern(weft::v1::TRAFFIC_PATTERN_PIPELINE);
        request.set_activation_bytes(uniform(1, 1 << 20));
        break;
    }
    RandomConstraints(rng, &request);
    const std::string mismatch = Compare(inst, request);
    ASSERT_EQ(mismatch, "") << "instance " << i;
    ++compared;
    placed += Place(inst.snapshot, inst.occupancy, request).ok();
  }
  // Make sure the sample is not degenerate.
  EXPECT_GT(compared, 1500);
  EXPECT_GT(placed, 1000);
}

// A random tensor x pipeline x data (x expert) job on `inst`. Node-aligned: pipeline
// stages are whole nodes and expert groups are whole nodes or inside one node, as in
// real 3D-parallel jobs. Otherwise any sizes that multiply out.
PlacementRequest StructuredJob(std::mt19937& rng, const Instance& inst, int i,
                               bool node_aligned) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto pick = [&](const std::vector<int>& v) { return v[uniform(0, v.size() - 1)]; };
  while (true) {
    PlacementRequest request;
    request.set_job_id(absl::StrCat("job-", i));
    const int nodes = uniform(1, std::min(inst.eligible, 6));
    const int ranks = nodes * inst.gpus;
    request.set_node_count(nodes);
    request.set_gpus_per_node(inst.gpus);
    const int tensor = pick(Divisors(inst.gpus));
    const int pipeline = pick(Divisors(ranks / tensor));
    const int data = ranks / tensor / pipeline;
    const int expert = pick(Divisors(data));
    auto* par = request.mutable_parallelism();
    par->set_tensor(tensor);
    par->set_pipeline(pipeline);
    par->set_data(data);
    par->set_expert(expert);
    request.set_gradient_bytes(uniform(0, 1 << 20));
    request.set_alltoall_bytes(uniform(0, 1 << 20));
    request.set_activation_bytes(uniform(0, 1 << 20));
    RandomConstraints(rng, &request);
    const bool stages_whole = pipeline == 1 || (tensor * data) % inst.gpus == 0;
    const int group = tensor * expert;
    const bool experts_whole = group % inst.gpus == 0 || inst.gpus % group == 0;
    if (!node_aligned || (stages_whole && experts_whole)) return request;
  }
}

TEST(EngineOptimalityTest, NodeAlignedStructuredJobsMatchExhaustiveSearch) {
  std::mt19937 rng(777);
  int compared = 0;
  for (int i = 0; i < 1500; ++i) {
    const Instance inst = RandomInstance(rng);
    if (inst.eligible == 0) continue;
    const PlacementRequest request = StructuredJob(rng, inst, i, /*node_aligned=*/true);
    const std::string mismatch = Compare(inst, request);
    ASSERT_EQ(mismatch, "") << "instance " << i;
    ++compared;
  }
  EXPECT_GT(compared, 1000);
}

// Stages that split a node can interleave in ways the engine's layouts do not try; it
// still reaches the fewest racks and pods, and refuses only when nothing fits.
TEST(EngineOptimalityTest, AnyStructuredJobGetsTheFewestRacksAndPods) {
  std::mt19937 rng(4242);
  int compared = 0, bytes_optimal = 0;
  for (int i = 0; i < 300; ++i) {
    const Instance inst = RandomInstance(rng);
    if (inst.eligible == 0) continue;
    const PlacementRequest request = StructuredJob(rng, inst, i, /*node_aligned=*/false);
    const Topology topo = *Topology::Build(inst.snapshot);
    const absl::StatusOr<Optimum> best = ExhaustiveOptimum(topo, inst.occupancy, request);
    const absl::StatusOr<PlacementResponse> placed = Place(topo, inst.occupancy, request);
    ASSERT_EQ(best.ok(), placed.ok()) << "instance " << i << ": " << request.ShortDebugString();
    ++compared;
    if (!best.ok()) continue;
    EXPECT_EQ(static_cast<int>(placed->racks_used()), best->racks) << "instance " << i;
    EXPECT_EQ(static_cast<int>(placed->pods_used()), best->pods) << "instance " << i;
    EXPECT_GE(placed->predicted_cross_rack_bytes(), best->cross_rack_bytes);
    bytes_optimal += placed->predicted_cross_rack_bytes() == best->cross_rack_bytes;
  }
  EXPECT_GT(compared, 200);
  std::printf("any structured job: %d instances, cross-rack bytes optimal on %d\n", compared,
              bytes_optimal);
}

}  // namespace
}  // namespace weft::placement
