#include "placement/traffic_model.h"

#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace weft::placement {
namespace {

using weft::v1::PlacementRequest;

JobShape Flat(int nodes, int gpn) {
  JobShape s;
  s.nodes = nodes;
  s.gpus_per_node = gpn;
  s.data = nodes * gpn;
  return s;
}

TEST(TrafficModelTest, RingCountsEdgesCrossingRacksIncludingTheClosingEdge) {
  // 4 nodes x 1 GPU, racks A A B B: ring 0-1-2-3-0 crosses at 1->2 and 3->0.
  // Each edge carries 2*(4-1)/4 * 1000 = 1500 bytes.
  const TrafficPrediction t =
      PredictTraffic(Flat(4, 1), {1000, 0, 0}, {0, 0, 1, 1}, {0, 0, 0, 0});
  EXPECT_EQ(t.cross_rack_bytes, 3000u);
  EXPECT_EQ(t.cross_pod_bytes, 0u);
  EXPECT_EQ(t.inter_node_bytes, 6000u);
}

TEST(TrafficModelTest, RingOverMultiGpuNodesOnlyCountsEdgesBetweenNodes) {
  // 3 nodes x 2 GPUs = 6 ranks; edge bytes 2*5/6 * 600 = 1000. Three node-to-node
  // edges, all across racks; pods P P Q: 1->2 and 2->0 cross pods.
  const TrafficPrediction t = PredictTraffic(Flat(3, 2), {600, 0, 0}, {0, 1, 2}, {0, 0, 1});
  EXPECT_EQ(t.cross_rack_bytes, 3000u);
  EXPECT_EQ(t.cross_pod_bytes, 2000u);
  EXPECT_EQ(t.inter_node_bytes, 3000u);
}

TEST(TrafficModelTest, SingleRackRingCrossesNothing) {
  const TrafficPrediction t = PredictTraffic(Flat(4, 8), {1 << 20, 0, 0}, {5, 5, 5, 5},
                                             {0, 0, 0, 0});
  EXPECT_EQ(t.cross_rack_bytes, 0u);
  EXPECT_GT(t.inter_node_bytes, 0u);
}

TEST(TrafficModelTest, AllToAllCountsPairsAcrossRacks) {
  // 4 ranks, racks A A A B: ordered pairs across racks 16 - (9 + 1) = 6, each 400/4.
  JobShape s = Flat(4, 1);
  s.expert = 4;
  const TrafficPrediction t = PredictTraffic(s, {0, 400, 0}, {0, 0, 0, 1}, {0, 0, 0, 0});
  EXPECT_EQ(t.cross_rack_bytes, 600u);
  EXPECT_EQ(t.inter_node_bytes, 1200u);  // 16 - 4 ordered pairs on different nodes
  EXPECT_EQ(t.cross_pod_bytes, 0u);
}

TEST(TrafficModelTest, ExpertGroupsInsideRacksCrossNothing) {
  JobShape s = Flat(4, 1);
  s.expert = 2;  // groups {0,1} and {2,3}
  EXPECT_EQ(PredictTraffic(s, {0, 100, 0}, {0, 0, 1, 1}, {0, 0, 0, 0}).cross_rack_bytes, 0u);
  // Interleaved racks: each group has 2 ordered pairs across, each 100/2.
  EXPECT_EQ(PredictTraffic(s, {0, 100, 0}, {0, 1, 0, 1}, {0, 0, 0, 0}).cross_rack_bytes, 200u);
}

TEST(TrafficModelTest, PipelineCountsNeighbouringStages) {
  // Pattern PIPELINE on 3 nodes x 2 GPUs: tensor 2, 3 stages. Racks A A B: stage 1->2
  // crosses, 2 ranks x 10 bytes.
  PlacementRequest r;
  r.set_node_count(3);
  r.set_pattern(weft::v1::TRAFFIC_PATTERN_PIPELINE);
  absl::StatusOr<JobShape> s = ResolveJobShape(r, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->tensor, 2);
  EXPECT_EQ(s->pipeline, 3);
  EXPECT_EQ(s->data, 1);
  const TrafficPrediction t = PredictTraffic(*s, {0, 0, 10}, {0, 0, 1}, {0, 0, 0});
  EXPECT_EQ(t.cross_rack_bytes, 20u);
  EXPECT_EQ(t.inter_node_bytes, 40u);
}

TEST(TrafficModelTest, ThreeDimensionalJobByHand) {
  // tensor 2 x data 2 x pipeline 2 on 4 nodes of 2 GPUs: rank = t + 2(d + 2p), node
  // = d + 2p. Data-parallel rings (t, p) join nodes 2p and 2p+1; pipeline pairs join
  // node d and d+2.
  JobShape s;
  s.gpus_per_node = 2;
  s.nodes = 4;
  s.tensor = 2;
  s.data = 2;
  s.pipeline = 2;
  const TrafficBytes bytes{100, 0, 7};
  // Racks A A B B: the four rings (2 edges of 2*1/2*100 each) stay in racks; the four
  // pipeline pairs all cross.
  TrafficPrediction t = PredictTraffic(s, bytes, {0, 0, 1, 1}, {0, 0, 0, 0});
  EXPECT_EQ(t.cross_rack_bytes, 28u);
  EXPECT_EQ(t.inter_node_bytes, 828u);
  // Racks A B A B: every ring edge crosses (8 x 100), pipeline pairs stay.
  t = PredictTraffic(s, bytes, {0, 1, 0, 1}, {0, 0, 0, 0});
  EXPECT_EQ(t.cross_rack_bytes, 800u);
}

TEST(TrafficModelTest, LinkLoadsFollowTheRing) {
  LinkLoads loads;
  PredictTraffic(Flat(4, 1), {1000, 0, 0}, {0, 0, 3, 3}, {0, 0, 0, 0}, &loads);
  ASSERT_EQ(loads.node_egress_bytes.size(), 4u);
  for (double b : loads.node_egress_bytes) EXPECT_DOUBLE_EQ(b, 1500);
  ASSERT_EQ(loads.rack_egress_bytes.size(), 4u);  // sized by the largest rack id
  EXPECT_DOUBLE_EQ(loads.rack_egress_bytes[0], 1500);
  EXPECT_DOUBLE_EQ(loads.rack_ingress_bytes[0], 1500);
  EXPECT_DOUBLE_EQ(loads.rack_egress_bytes[3], 1500);
  EXPECT_DOUBLE_EQ(loads.rack_egress_bytes[1], 0);
}

// Straightforward rank-by-rank reference: every ring edge, ordered pair and pipeline
// pair, without shortcuts.
TrafficPrediction Reference(const JobShape& s, const TrafficBytes& b,
                            const std::vector<int>& rack, const std::vector<int>& pod) {
  const int T = s.tensor, D = s.data, P = s.pipeline, E = s.expert;
  auto node = [&](int t, int d, int p) { return (t + T * (d + D * p)) / s.gpus_per_node; };
  unsigned __int128 dp[3] = {0, 0, 0}, ep[3] = {0, 0, 0}, pp[3] = {0, 0, 0};
  auto count = [&](unsigned __int128* c, int a, int z) {
    if (a == z) return;
    ++c[0];
    if (rack[a] != rack[z]) ++c[1];
    if (pod[a] != pod[z]) ++c[2];
  };
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) {
      for (int d = 0; d < D && D > 1; ++d) count(dp, node(t, d, p), node(t, (d + 1) % D, p));
      for (int d = 0; d < D; ++d) {
        for (int e = (d / E) * E; e < (d / E + 1) * E; ++e) {
          if (e != d) count(ep, node(t, d, p), node(t, e, p));
        }
        if (p + 1 < P) count(pp, node(t, d, p), node(t, d, p + 1));
      }
    }
  }
  auto total = [&](int i) {
    uint64_t sum = 0;
    if (D > 1) sum += static_cast<uint64_t>(dp[i] * 2 * (D - 1) * b.gradient_bytes / D);
    if (E > 1) sum += static_cast<uint64_t>(ep[i] * b.alltoall_bytes / E);
    sum += static_cast<uint64_t>(pp[i] * b.activation_bytes);
    return sum;
  };
  return TrafficPrediction{total(1), total(2), total(0)};
}

TEST(TrafficModelTest, MatchesARankByRankReference) {
  std::mt19937 rng(5);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 300; ++i) {
    JobShape s;
    s.gpus_per_node = uniform(1, 8);
    s.tensor = uniform(1, 4);  // not always a divisor of gpus_per_node
    s.pipeline = uniform(1, 4);
    s.expert = uniform(1, 3);
    s.data = s.expert * uniform(1, 4);
    const int ranks = s.ranks();
    if (ranks % s.gpus_per_node != 0) continue;
    s.nodes = ranks / s.gpus_per_node;
    std::vector<int> rack(s.nodes), pod(s.nodes);
    for (int n = 0; n < s.nodes; ++n) {
      rack[n] = uniform(0, 3);
      pod[n] = rack[n] / 2;
    }
    const TrafficBytes b{static_cast<uint64_t>(uniform(0, 1000)),
                         static_cast<uint64_t>(uniform(0, 1000)),
                         static_cast<uint64_t>(uniform(0, 1000))};
    const TrafficPrediction got = PredictTraffic(s, b, rack, pod);
    const TrafficPrediction want = Reference(s, b, rack, pod);
    EXPECT_EQ(got.cross_rack_bytes, want.cross_rack_bytes) << "case " << i;
    EXPECT_EQ(got.cross_pod_bytes, want.cross_pod_bytes) << "case " << i;
    EXPECT_EQ(got.inter_node_bytes, want.inter_node_bytes) << "case " << i;
  }
}

TEST(ResolveJobShapeTest, PatternsAndSizes) {
  PlacementRequest r;
  r.set_rank_count(32);
  absl::StatusOr<JobShape> s = ResolveJobShape(r, 8);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 4);
  EXPECT_EQ(s->data, 32);
  EXPECT_EQ(s->ranks(), 32);

  r.set_pattern(weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL);
  s = ResolveJobShape(r, 8);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->expert, 32);

  PlacementRequest p;
  p.mutable_parallelism()->set_tensor(4);
  p.mutable_parallelism()->set_pipeline(2);
  p.mutable_parallelism()->set_data(8);
  p.mutable_parallelism()->set_expert(4);
  s = ResolveJobShape(p, 8);  // sized by the parallelism: 64 ranks
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 8);
  EXPECT_EQ(s->ExpertGroupNodes(), 2);  // 4 x 4 ranks = 2 nodes
  EXPECT_EQ(s->StageNodes(), 4);        // 4 x 8 ranks = 4 nodes

  p.set_node_count(8);
  p.mutable_parallelism()->clear_data();  // derived: 64 / (4 x 2)
  s = ResolveJobShape(p, 8);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->data, 8);
}

TEST(ResolveJobShapeTest, RefusalsSayWhatToChange) {
  struct Case {
    std::string what;
    PlacementRequest request;
    int gpn;
    std::string message;
  };
  std::vector<Case> cases;
  {
    Case c{"no size", {}, 8, "the request gives no size; set node_count, rank_count, or parallelism.data"};
    cases.push_back(c);
  }
  {
    Case c{"ranks not a multiple", {}, 8,
           "rank_count 20 is not a multiple of gpus_per_node 8; ask for a multiple of 8 ranks "
           "or set gpus_per_node to a divisor of 20"};
    c.request.set_rank_count(20);
    cases.push_back(c);
  }
  {
    Case c{"tensor too big", {}, 8,
           "tensor parallel size 16 is larger than gpus_per_node 8: a tensor-parallel group "
           "must fit inside one node"};
    c.request.set_node_count(4);
    c.request.mutable_parallelism()->set_tensor(16);
    cases.push_back(c);
  }
  {
    Case c{"tensor straddles", {}, 8,
           "tensor parallel size 3 does not divide gpus_per_node 8: tensor-parallel groups "
           "must not straddle nodes"};
    c.request.set_node_count(3);
    c.request.mutable_parallelism()->set_tensor(3);
    cases.push_back(c);
  }
  {
    Case c{"product mismatch", {}, 8,
           "tensor x pipeline x data = 2 x 4 x 4 = 32 ranks, but the job has 64 ranks (8 "
           "nodes x 8 GPUs)"};
    c.request.set_node_count(8);
    c.request.mutable_parallelism()->set_tensor(2);
    c.request.mutable_parallelism()->set_pipeline(4);
    c.request.mutable_parallelism()->set_data(4);
    cases.push_back(c);
  }
  {
    Case c{"expert", {}, 8, "expert parallel size 3 does not divide data parallel size 8"};
    c.request.set_node_count(1);
    c.request.mutable_parallelism()->set_expert(3);
    cases.push_back(c);
  }
  {
    Case c{"zero nodes", {}, 8, "node_count is 0; ask for at least one node"};
    c.request.set_node_count(0);
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    absl::StatusOr<JobShape> s = ResolveJobShape(c.request, c.gpn);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(s.status().message(), c.message) << c.what;
  }
}

}  // namespace
}  // namespace weft::placement
