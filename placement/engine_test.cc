#include "placement/engine.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"

namespace weft::placement {
namespace {

using weft::v1::ClusterSnapshot;
using weft::v1::Occupancy;
using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

PlacementResponse MustPlace(const ClusterSnapshot& snapshot, const PlacementRequest& request,
                            const Occupancy& occupancy = {}) {
  absl::StatusOr<PlacementResponse> placed = Place(snapshot, occupancy, request);
  EXPECT_TRUE(placed.ok()) << placed.status();
  return placed.ok() ? *placed : PlacementResponse();
}

// Rack of each node in ring order, from the answer's rank assignments.
std::vector<std::string> RingRacks(const PlacementResponse& r) {
  std::map<std::string, std::string> rack_of;
  for (const auto& a : r.ranks()) rack_of[a.node()] = a.rack();
  std::vector<std::string> out;
  for (const std::string& node : r.ring_order()) out.push_back(rack_of[node]);
  return out;
}

std::set<std::string> RackSet(const PlacementResponse& r) {
  return std::set<std::string>(r.racks().begin(), r.racks().end());
}

int RingRackCrossings(const PlacementResponse& r) {
  const std::vector<std::string> racks = RingRacks(r);
  int crossings = 0;
  for (size_t i = 0; i < racks.size(); ++i) {
    if (racks[i] != racks[(i + 1) % racks.size()]) ++crossings;
  }
  return crossings;
}

TEST(EngineTest, FitsInOneRackWhenOneRackCan) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 4}, {"b", "p1", 4}, {"c", "p1", 8}});
  const PlacementResponse r = MustPlace(s, RingJob("j", 8));
  EXPECT_EQ(r.racks_used(), 1u);
  EXPECT_EQ(RackSet(r), (std::set<std::string>{"c"}));
  EXPECT_EQ(r.predicted_cross_rack_bytes(), 0u);
  EXPECT_EQ(r.ring_order_size(), 8);
  EXPECT_EQ(r.ranks_size(), 64);
  EXPECT_EQ(r.job_id(), "j");
  EXPECT_EQ(r.reservation_id(), "");  // the reservation book sets it
}

TEST(EngineTest, BestFitPicksTheSmallestRackThatFits) {
  const ClusterSnapshot s = MakeCluster({{"big", "p1", 32}, {"mid", "p1", 12}, {"small", "p1", 10}});
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("j", 10))), (std::set<std::string>{"small"}));
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("j", 11))), (std::set<std::string>{"mid"}));
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("j", 13))), (std::set<std::string>{"big"}));
}

TEST(EngineTest, BestFitKeepsTheBigRackWhole) {
  // 40 nodes need two racks; big+small would leave 12 free in the big rack, the two
  // small ones fit exactly.
  const ClusterSnapshot s = MakeCluster({{"big", "p1", 32}, {"s1", "p1", 20}, {"s2", "p1", 20}});
  const PlacementResponse r = MustPlace(s, RingJob("j", 40));
  EXPECT_EQ(r.racks_used(), 2u);
  EXPECT_EQ(RackSet(r), (std::set<std::string>{"s1", "s2"}));
}

TEST(EngineTest, FewestRacksBeforeBestFit) {
  // 3 racks of 8 could hold 20 exactly with 8+8+4 leftover 4; 16+8 needs only two racks.
  const ClusterSnapshot s =
      MakeCluster({{"a", "p1", 8}, {"b", "p1", 8}, {"c", "p1", 8}, {"d", "p1", 16}});
  const PlacementResponse r = MustPlace(s, RingJob("j", 20));
  EXPECT_EQ(r.racks_used(), 2u);
  EXPECT_TRUE(RackSet(r).count("d"));
}

TEST(EngineTest, LessCongestedRackWinsAmongEqualRackCounts) {
  const ClusterSnapshot s = MakeCluster({{"hot", "p1", 8, 0.5}, {"cool", "p1", 8, 0.05}});
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("j", 8))), (std::set<std::string>{"cool"}));
}

TEST(EngineTest, CongestionOutranksBestFitButNoiseDoesNot) {
  // Same congestion level (0.00 vs 0.04): best fit picks the exact fit.
  ClusterSnapshot s = MakeCluster({{"fit", "p1", 8, 0.04}, {"roomy", "p1", 16, 0.0}});
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("j", 8))), (std::set<std::string>{"fit"}));
  // Level 3 against level 0: the quiet rack, although it fits worse.
  s = MakeCluster({{"fit", "p1", 8, 0.35}, {"roomy", "p1", 16, 0.0}});
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("j", 8))), (std::set<std::string>{"roomy"}));
}

TEST(EngineTest, LeastCongestedNodesOfARackFirst) {
  ClusterSnapshot s = MakeCluster({{"a", "p1", 4}});
  MutableNode(&s, "a-01")->set_congestion(0.9);
  MutableNode(&s, "a-03")->set_congestion(0.2);
  const PlacementResponse r = MustPlace(s, RingJob("j", 2));
  EXPECT_EQ(std::vector<std::string>(r.ring_order().begin(), r.ring_order().end()),
            (std::vector<std::string>{"a-02", "a-04"}));
}

TEST(EngineTest, SkipsExcludedDrainedUnhealthyAndTakenNodes) {
  ClusterSnapshot s = MakeCluster({{"a", "p1", 4}, {"b", "p1", 2}});
  MutableNode(&s, "a-01")->set_healthy(false);
  MutableNode(&s, "a-02")->set_drained(true);
  const Occupancy taken = OccupancyOf({"a-03"});
  PlacementRequest request = RingJob("j", 2);
  request.mutable_constraints()->add_exclude_nodes("a-04");
  PlacementResponse r = MustPlace(s, request, taken);
  EXPECT_EQ(std::vector<std::string>(r.ring_order().begin(), r.ring_order().end()),
            (std::vector<std::string>{"b-01", "b-02"}));

  request.set_node_count(3);
  absl::StatusOr<PlacementResponse> refused = Place(s, taken, request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "job 'j' needs 3 nodes with 8 GPUs; 2 are free and eligible (by pod: p1 2; by "
            "rack: b 2); not eligible: 1 unhealthy, 1 drained, 1 in use, 1 excluded");
}

TEST(EngineTest, CapacityRefusalListsFreeNodesPerPodAndRack) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 3}, {"b", "p1", 1}, {"c", "p2", 2}});
  absl::StatusOr<PlacementResponse> refused = Place(s, {}, RingJob("big", 7));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "job 'big' needs 7 nodes with 8 GPUs; 6 are free and eligible (by pod: p1 4, p2 "
            "2; by rack: a 3, c 2, b 1)");
}

TEST(EngineTest, RingCrossesRackBoundariesOncePerRack) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 4}, {"b", "p1", 4}, {"c", "p1", 4}});
  const PlacementResponse r = MustPlace(s, RingJob("j", 10, 800));
  EXPECT_EQ(r.racks_used(), 3u);
  EXPECT_EQ(RingRackCrossings(r), 3);
  // 80 ranks: each ring edge carries 2 * 79 / 80 * 800 = 1580 bytes; 3 edges cross racks;
  // 10 edges join nodes.
  EXPECT_EQ(r.predicted_cross_rack_bytes(), 3u * 1580u);
  EXPECT_EQ(r.predicted_inter_node_bytes(), 10u * 1580u);
  EXPECT_EQ(r.predicted_cross_pod_bytes(), 0u);
}

TEST(EngineTest, FewestPodsAmongEqualRackCounts) {
  // 12 nodes need two racks: a+b stays in pod p1 (leftover 1), b+c fits exactly but
  // spans two pods.
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 7}, {"b", "p1", 6}, {"c", "p2", 6}});
  const PlacementResponse r = MustPlace(s, RingJob("j", 12));
  EXPECT_EQ(r.pods_used(), 1u);
  EXPECT_EQ(RackSet(r), (std::set<std::string>{"a", "b"}));
}

TEST(EngineTest, PodsAreContiguousInTheRing) {
  const ClusterSnapshot s = MakeCluster(
      {{"a", "p1", 2}, {"x", "p2", 2}, {"b", "p1", 2}, {"y", "p2", 2}}, 1, 1);
  const PlacementResponse r = MustPlace(s, RingJob("j", 8, 1000));
  EXPECT_EQ(r.pods_used(), 2u);
  std::vector<std::string> pods;
  for (const auto& a : r.ranks()) pods.push_back(a.pod());
  int pod_changes = 0;
  for (size_t i = 0; i < pods.size(); ++i) pod_changes += pods[i] != pods[(i + 1) % pods.size()];
  EXPECT_EQ(pod_changes, 2);
  EXPECT_EQ(RingRackCrossings(r), 4);
  // 8 ranks: edge bytes 2 * 7 / 8 * 1000 = 1750.
  EXPECT_EQ(r.predicted_cross_rack_bytes(), 4u * 1750u);
  EXPECT_EQ(r.predicted_cross_pod_bytes(), 2u * 1750u);
}

TEST(EngineTest, AllToAllPrefersAnUnevenSplit) {
  // Ring: b+c fit 8 exactly (4+4). All-to-all: 5+3 leaves fewer pairs across racks
  // (64 - 25 - 9 = 30 ordered pairs instead of 32).
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 5}, {"b", "p1", 4}, {"c", "p1", 4}}, 1, 1);
  EXPECT_EQ(RackSet(MustPlace(s, RingJob("ring", 8))), (std::set<std::string>{"b", "c"}));

  PlacementRequest a2a;
  a2a.set_job_id("moe");
  a2a.set_node_count(8);
  a2a.set_pattern(weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL);
  a2a.set_alltoall_bytes(800);
  const PlacementResponse r = MustPlace(s, a2a);
  EXPECT_EQ(r.racks_used(), 2u);
  EXPECT_TRUE(RackSet(r).count("a"));
  EXPECT_EQ(r.predicted_cross_rack_bytes(), 30u * 100u);
}

TEST(EngineTest, TensorGroupsInsideANodeAndStagesOnNeighbouringNodes) {
  // tensor 4 x pipeline 2 x data 4 = 32 ranks on 4 nodes; racks of 3 free nodes each.
  // Splitting 2+2 keeps each pipeline stage (2 nodes) in one rack, so the heavy
  // data-parallel rings never leave a rack; only stage-to-stage activations do.
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 3}, {"b", "p1", 3}});
  PlacementRequest request;
  request.set_job_id("3d");
  request.set_node_count(4);
  request.mutable_parallelism()->set_tensor(4);
  request.mutable_parallelism()->set_pipeline(2);
  request.set_gradient_bytes(1 << 30);
  request.set_activation_bytes(1 << 20);
  const PlacementResponse r = MustPlace(s, request);
  ASSERT_EQ(r.ranks_size(), 32);
  for (int group = 0; group < 8; ++group) {  // tensor groups: 4 consecutive ranks
    for (int i = 1; i < 4; ++i) {
      EXPECT_EQ(r.ranks(group * 4 + i).node(), r.ranks(group * 4).node()) << "group " << group;
    }
  }
  EXPECT_EQ(RingRacks(r), (std::vector<std::string>{"a", "a", "b", "b"}));
  // Stage 0 = ranks 0..15 (nodes 0, 1), stage 1 = ranks 16..31 (nodes 2, 3): 16
  // activation pairs, all across racks; no gradient bytes cross.
  EXPECT_EQ(r.predicted_cross_rack_bytes(), 16u << 20);
  EXPECT_EQ(r.layout().data(), 4u);
}

TEST(EngineTest, ExpertGroupsStayInsideARack) {
  // expert 16 on 8-GPU nodes: each expert group spans 2 nodes. 6 nodes over racks of 5
  // free: 5+1 would split the third group; 4+2 keeps all three inside racks.
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 5}, {"b", "p1", 5}});
  PlacementRequest request;
  request.set_job_id("moe");
  request.set_node_count(6);
  request.mutable_parallelism()->set_expert(16);
  request.set_alltoall_bytes(1 << 30);
  const PlacementResponse r = MustPlace(s, request);
  EXPECT_EQ(r.racks_used(), 2u);
  const std::vector<std::string> racks = RingRacks(r);
  ASSERT_EQ(racks.size(), 6u);
  for (int group = 0; group < 3; ++group) {
    EXPECT_EQ(racks[2 * group], racks[2 * group + 1]) << "expert group " << group;
  }
  EXPECT_EQ(r.predicted_cross_rack_bytes(), 0u);
}

TEST(EngineTest, EachGpuUsesItsClosestNic) {
  // 8 GPUs on 4 NICs: GPUs 2i and 2i+1 share NIC i.
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 2}}, 8, 4);
  const PlacementResponse r = MustPlace(s, RingJob("j", 2));
  ASSERT_EQ(r.ranks_size(), 16);
  EXPECT_EQ(r.ranks(5).node(), "a-01");
  EXPECT_EQ(r.ranks(5).gpu_index(), 5u);
  EXPECT_EQ(r.ranks(5).nic(), "mlx5_2");
  EXPECT_EQ(r.ranks(9).node(), "a-02");
  EXPECT_EQ(r.ranks(9).gpu_index(), 1u);
  EXPECT_EQ(r.ranks(9).nic(), "mlx5_0");
  EXPECT_EQ(r.ranks(9).rack(), "a");
  EXPECT_EQ(r.ranks(9).pod(), "p1");
}

TEST(EngineTest, FewerGpusPerNodeSpreadOverNics) {
  // 4 of 8 GPUs on 4 NICs: one GPU per NIC (0, 2, 4, 6), not GPUs 0-3 on two NICs.
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 1}}, 8, 4);
  PlacementRequest request = RingJob("j", 1);
  request.set_gpus_per_node(4);
  const PlacementResponse r = MustPlace(s, request);
  ASSERT_EQ(r.ranks_size(), 4);
  std::vector<uint32_t> gpus;
  for (const auto& a : r.ranks()) gpus.push_back(a.gpu_index());
  EXPECT_EQ(gpus, (std::vector<uint32_t>{0, 2, 4, 6}));
  ASSERT_EQ(r.node_env_size(), 1);
  EXPECT_EQ(r.node_env(0).env(0).value(), "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
}

TEST(EngineTest, NodeEnvironmentForTrainingAndStorage) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 2}}, 2, 2);
  PlacementResponse r = MustPlace(s, RingJob("j", 2));
  ASSERT_EQ(r.node_env_size(), 2);
  EXPECT_EQ(r.node_env(1).node(), "a-02");
  std::map<std::string, std::string> env;
  for (const auto& v : r.node_env(1).env()) env[v.name()] = v.value();
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"},
                                                     {"NCCL_IB_GID_INDEX", "3"},
                                                     {"NCCL_IB_TC", "106"},
                                                     {"NCCL_SOCKET_IFNAME", "=ens0np0"}}));
  EXPECT_EQ(r.traffic_class(), 106u);

  PlacementRequest storage = RingJob("s", 2);
  storage.set_qos_class("storage");
  r = MustPlace(s, storage);
  EXPECT_EQ(r.traffic_class(), 98u);
}

TEST(EngineTest, MaxCongestionKeepsHotNodesOut) {
  ClusterSnapshot s = MakeCluster({{"a", "p1", 3}});
  MutableNode(&s, "a-02")->set_congestion(0.8);
  PlacementRequest request = RingJob("j", 2);
  request.mutable_constraints()->set_max_congestion(0.5);
  const PlacementResponse r = MustPlace(s, request);
  EXPECT_EQ(std::vector<std::string>(r.ring_order().begin(), r.ring_order().end()),
            (std::vector<std::string>{"a-01", "a-03"}));
  request.set_node_count(3);
  absl::StatusOr<PlacementResponse> refused = Place(s, {}, request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "job 'j' needs 3 nodes with 8 GPUs; 2 are free and eligible (by pod: p1 2; by "
            "rack: a 2); not eligible: 1 above max_congestion");
}

TEST(EngineTest, MaxRacksTooSmallForTheCluster) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 4}, {"b", "p1", 4}, {"c", "p1", 4}});
  PlacementRequest request = RingJob("j", 10);
  request.mutable_constraints()->set_max_racks(2);
  absl::StatusOr<PlacementResponse> refused = Place(s, {}, request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "job 'j' needs 10 nodes, but constraints.max_racks is 2 and the 2 largest racks "
            "have 8 nodes; allow at least 3 racks");
}

TEST(EngineTest, MaxRacksTooSmallForWhatIsFreeNow) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 8}, {"b", "p1", 8}, {"c", "p1", 8}});
  const Occupancy taken = OccupancyOf({"a-01", "a-02", "a-03", "a-04", "b-01", "b-02",
                                       "b-03", "b-04", "b-05", "c-01", "c-02", "c-03"});
  PlacementRequest request = RingJob("j", 10);
  request.mutable_constraints()->set_max_racks(2);
  absl::StatusOr<PlacementResponse> refused = Place(s, taken, request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "job 'j' needs 10 nodes with 8 GPUs within constraints.max_racks 2, but the 2 "
            "racks with the most free and eligible nodes hold 9 (c 5, a 4); allow 3 racks or "
            "wait for nodes to free up");
  request.mutable_constraints()->set_max_racks(3);
  EXPECT_EQ(MustPlace(s, request, taken).racks_used(), 3u);
}

TEST(EngineTest, MaxRacksBeyondTheClusterIsNoLimit) {
  // max_racks is a uint32: values above INT_MAX must not wrap to a negative count.
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 4}, {"b", "p1", 4}, {"c", "p1", 4}});
  PlacementRequest request = RingJob("j", 10);
  for (uint32_t max_racks : {3u, 1000u, 2147483648u, 4294967295u}) {
    request.mutable_constraints()->set_max_racks(max_racks);
    EXPECT_EQ(MustPlace(s, request).racks_used(), 3u) << "max_racks " << max_racks;
  }
}

TEST(EngineTest, SinglePod) {
  // Free: 9 nodes fit in two racks across pods (d + one of a, b, c), or in three racks
  // of pod p1. Fewest racks wins unless the job asks for one pod.
  const ClusterSnapshot s =
      MakeCluster({{"a", "p1", 3}, {"b", "p1", 3}, {"c", "p1", 3}, {"d", "p2", 6}});
  PlacementRequest request = RingJob("j", 9);
  PlacementResponse r = MustPlace(s, request);
  EXPECT_EQ(r.racks_used(), 2u);
  EXPECT_EQ(r.pods_used(), 2u);
  request.mutable_constraints()->set_single_pod(true);
  r = MustPlace(s, request);
  EXPECT_EQ(r.racks_used(), 3u);
  EXPECT_EQ(RackSet(r), (std::set<std::string>{"a", "b", "c"}));

  request.set_node_count(10);
  absl::StatusOr<PlacementResponse> refused = Place(s, {}, request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "job 'j' needs 10 nodes in a single pod (constraints.single_pod), but the largest "
            "pod has 9 nodes; drop single_pod or ask for at most 9 nodes");

  request.set_node_count(7);
  refused = Place(s, OccupancyOf({"a-01", "a-02", "b-01", "d-01"}), request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "job 'j' needs 7 nodes with 8 GPUs in a single pod (constraints.single_pod); the "
            "most free and eligible in one pod is 6 (pod p1); 11 are free and eligible (by "
            "pod: p1 6, p2 5; by rack: d 5, c 3, b 2, a 1); not eligible: 4 in use");
}

TEST(EngineTest, RequestRefusals) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 4}});
  struct Case {
    std::string what;
    PlacementRequest request;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  {
    Case c{"unknown qos", RingJob("j", 1), absl::StatusCode::kInvalidArgument,
           "unknown qos_class 'gold'; accepted: training, storage, control"};
    c.request.set_qos_class("gold");
    cases.push_back(c);
  }
  {
    Case c{"no job id", RingJob("", 1), absl::StatusCode::kInvalidArgument,
           "job_id is empty; every placement needs a job id (it keys the reservation)"};
    cases.push_back(c);
  }
  {
    Case c{"tensor too large", RingJob("j", 2), absl::StatusCode::kInvalidArgument,
           "tensor parallel size 16 is larger than gpus_per_node 8: a tensor-parallel group "
           "must fit inside one node"};
    c.request.mutable_parallelism()->set_tensor(16);
    cases.push_back(c);
  }
  {
    Case c{"unknown excluded node", RingJob("j", 1), absl::StatusCode::kInvalidArgument,
           "constraints.exclude_nodes names 'z-01', which is not in the cluster snapshot"};
    c.request.mutable_constraints()->add_exclude_nodes("z-01");
    cases.push_back(c);
  }
  {
    Case c{"more GPUs than any node", RingJob("j", 1), absl::StatusCode::kResourceExhausted,
           "job 'j' needs 1 node with 16 GPUs; 0 are free and eligible; not eligible: 4 with "
           "too few GPUs"};
    c.request.set_gpus_per_node(16);
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    absl::StatusOr<PlacementResponse> r = Place(s, {}, c.request);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), c.code) << c.what;
    EXPECT_EQ(r.status().message(), c.message) << c.what;
  }
}

TEST(EngineTest, MixedGpuCountsNeedGpusPerNode) {
  ClusterSnapshot s = MakeCluster({{"a", "p1", 2}});
  MutableNode(&s, "a-02")->mutable_gpus()->RemoveLast();
  absl::StatusOr<PlacementResponse> r = Place(s, {}, RingJob("j", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "gpus_per_node is 0 and the snapshot's nodes have different GPU counts; say how "
            "many GPUs per node the job uses");
  PlacementRequest request = RingJob("j", 2);
  request.set_gpus_per_node(7);
  EXPECT_EQ(MustPlace(s, request).ranks_size(), 14);
}

TEST(EngineTest, BadGpuToNicMappingIsReportedForTheNodesUsed) {
  ClusterSnapshot s = MakeCluster({{"a", "p1", 2}, {"b", "p1", 1}});
  MutableNode(&s, "b-01")->mutable_gpus(3)->set_closest_nic("mlx5_77");
  // From the snapshot, only the GPUs and NICs of the nodes used are read.
  EXPECT_EQ(MustPlace(s, RingJob("j", 2)).racks(0), "a");
  absl::StatusOr<PlacementResponse> r = Place(s, {}, RingJob("j", 3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "nodes[2] 'b-01': GPU 3 names closest_nic 'mlx5_77', which is not one of its NICs");
}

TEST(EngineTest, OccupancyOfUnknownNodesIsIgnored) {
  const ClusterSnapshot s = MakeCluster({{"a", "p1", 2}});
  EXPECT_EQ(MustPlace(s, RingJob("j", 2), OccupancyOf({"gone-01"})).ring_order_size(), 2);
}

}  // namespace
}  // namespace weft::placement
