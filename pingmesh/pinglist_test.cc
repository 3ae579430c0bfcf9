#include "pingmesh/pinglist.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::pingmesh {
namespace {

// `racks` racks of `nodes` nodes with `nics` NICs, all on the rack's ToR (leaf-spine).
FabricInventory LeafSpine(int racks, int nodes, int nics, int uplinks) {
  FabricInventory inventory;
  for (int r = 0; r < racks; ++r) {
    inventory.tors.push_back({absl::StrCat("tor", r), uplinks});
    for (int n = 0; n < nodes; ++n) {
      NodeSpec node{absl::StrCat("gpu-", r, "-", n), absl::StrCat("rack", r), {}};
      for (int i = 0; i < nics; ++i) {
        node.nics.push_back({absl::StrCat("mlx5_", i), i, absl::StrCat("tor", r), 400e9});
      }
      inventory.nodes.push_back(node);
    }
  }
  return inventory;
}

std::map<ProbeKey, PinglistEntry> Entries(const PinglistPlan& plan) {
  std::map<ProbeKey, PinglistEntry> entries;
  for (const Pinglist& list : plan.pinglists) {
    for (const PinglistEntry& e : list.entries) entries[e.key] = e;
  }
  return entries;
}

TEST(ProbesToCoverTest, MatchesTheCouponCollectorBound) {
  EXPECT_EQ(ProbesToCover(1, 0.99), 1);
  // Two paths: miss both sides' chance 2·0.5^k ≤ 0.01 → k = 8.
  EXPECT_EQ(ProbesToCover(2, 0.99), 8);
  int k8 = ProbesToCover(8, 0.99);
  EXPECT_GT(k8, 8 * 2);   // more than N ln N
  EXPECT_LT(k8, 8 * 8);   // less than the union bound's N (ln N + ln 100)
}

TEST(LinkProbesTest, GrayLossTargetNeedsHundredsOfProbesPerSecond) {
  // ≥ 4 losses at 1e-3 within 5 s with probability 0.95: λ = 7.75 → 1,550 probes/s.
  EXPECT_NEAR(LinkProbesPerSecondForDetection(1e-3, 5, 0.95, 4), 1550, 2);
  EXPECT_NEAR(LinkProbesPerSecondForDetection(1e-3, 5, 0.95, 1), 599, 1);  // −ln 0.05 = 3.0
}

TEST(PinglistTest, MeshesAreWhatPingmeshProbes) {
  absl::StatusOr<PinglistPlan> plan = BuildPinglists(LeafSpine(3, 4, 2, 4), {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<StreamKind, std::set<std::pair<std::string, std::string>>> pairs;
  for (const auto& [key, entry] : Entries(*plan)) {
    pairs[entry.kind].insert({key.src_node + "/" + key.src_nic, key.dst_node + "/" + key.dst_nic});
  }
  // ToR mesh: 3 ToRs × 2 rails × 4·3 ordered node pairs.
  EXPECT_EQ(pairs[StreamKind::kTorMesh].size(), 3u * 2 * 12);
  // Rack to rack: 12 nodes × 2 other racks × 2 rails, same rail only.
  EXPECT_EQ(pairs[StreamKind::kRackToRack].size(), 12u * 2 * 2);
  for (const auto& [src, dst] : pairs[StreamKind::kRackToRack]) {
    EXPECT_EQ(src.back(), dst.back()) << src << " -> " << dst;
  }
  // Across rails: 12 nodes × 2 ordered NIC pairs.
  EXPECT_EQ(pairs[StreamKind::kCrossRail].size(), 12u * 2);
}

TEST(PinglistTest, RatesMeetTheGrayLossTargetOnTheLeastProbedLink) {
  PinglistOptions options;
  absl::StatusOr<PinglistPlan> plan = BuildPinglists(LeafSpine(4, 8, 2, 4), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->meets_detection_target);
  EXPECT_GE(plan->min_nic_link_probes_per_s, plan->required_link_probes_per_s);
  EXPECT_GE(plan->min_uplink_probes_per_s, plan->required_link_probes_per_s);
  EXPECT_LE(plan->max_node_probes_per_s, options.max_probes_per_node_per_s);
  EXPECT_LE(plan->max_nic_capacity_share, options.max_nic_capacity_share);
  // Whole probes per second, never more than one above what the target needs: the
  // crossing rate for the least-loaded uplink, the local rate for the least-probed cable.
  double fewest_uplink = plan->min_uplink_probes_per_s / plan->crossing_probes_per_s;
  EXPECT_LT((plan->crossing_probes_per_s - 1) * fewest_uplink, plan->required_link_probes_per_s);
  std::map<std::string, std::pair<int, int>> local_and_crossing;  // per NIC
  for (const auto& [key, entry] : Entries(*plan)) {
    bool local = key.src_node.substr(0, 6) == key.dst_node.substr(0, 6);  // "gpu-<rack>-"
    EXPECT_EQ(entry.probes_per_s,
              local ? plan->local_probes_per_s : plan->crossing_probes_per_s);
    for (std::string nic : {key.src_node + "/" + key.src_nic, key.dst_node + "/" + key.dst_nic}) {
      ++(local ? local_and_crossing[nic].first : local_and_crossing[nic].second);
    }
  }
  double least_with_one_less = 1e18;
  for (const auto& [nic, counts] : local_and_crossing) {
    least_with_one_less =
        std::min(least_with_one_less, counts.first * (plan->local_probes_per_s - 1) +
                                          counts.second * plan->crossing_probes_per_s);
  }
  EXPECT_LT(least_with_one_less, plan->required_link_probes_per_s);
  // The target leaves the localiser its delay: 4 losses within 4.5 s.
  EXPECT_NEAR(plan->required_link_probes_per_s,
              LinkProbesPerSecondForDetection(1e-3, 4.5, 0.95, 4), 1e-6);
}

TEST(FewestStreamsPerPathTest, HoldsForTheLeastLoadedOfRandomHashes) {
  EXPECT_EQ(FewestStreamsPerPath(7, 1, 0.99), 7);
  EXPECT_EQ(FewestStreamsPerPath(16, 8, 0.99), 0);  // some path may get none
  int k = FewestStreamsPerPath(320, 8, 0.99);
  EXPECT_GT(k, 20);
  EXPECT_LT(k, 40);  // the mean
  // 2,000 draws of 320 streams hashed onto 8 paths: the least-loaded path gets fewer than
  // k in at most 1 % of them (the union bound is loose: far fewer).
  std::mt19937_64 rng(11);
  int below = 0;
  for (int draw = 0; draw < 2000; ++draw) {
    std::vector<int> load(8, 0);
    for (int s = 0; s < 320; ++s) ++load[std::uniform_int_distribution<int>(0, 7)(rng)];
    below += *std::min_element(load.begin(), load.end()) < k ? 1 : 0;
  }
  EXPECT_LE(below, 20);
  EXPECT_GT(below, 0) << "k is not far under what the bound allows";
}

TEST(PinglistTest, NodeBudgetCapsTheRateAndSaysSo) {
  PinglistOptions options;
  options.max_probes_per_node_per_s = 100;
  absl::StatusOr<PinglistPlan> plan = BuildPinglists(LeafSpine(4, 8, 2, 4), options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->meets_detection_target);
  EXPECT_LE(plan->max_node_probes_per_s, 100 + 1e-9);
}

TEST(PinglistTest, FewStreamsLeavingAToRGetMorePortsToCoverItsUplinks) {
  // 2 racks of 1 node, 1 NIC: one stream leaves each ToR; 8 uplinks need many ports.
  absl::StatusOr<PinglistPlan> plan = BuildPinglists(LeafSpine(2, 1, 1, 8), {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::set<uint16_t> ports;
  for (const auto& [key, entry] : Entries(*plan)) {
    if (key.src_node == "gpu-0-0") ports.insert(key.udp_src_port);
    EXPECT_GE(key.udp_src_port, 0xC000);
  }
  EXPECT_EQ(ports.size(), 8u);  // capped at max_ports_per_pair
}

TEST(PinglistTest, SameInventorySamePinglists) {
  auto a = BuildPinglists(LeafSpine(3, 4, 2, 4), {});
  auto b = BuildPinglists(LeafSpine(3, 4, 2, 4), {});
  ASSERT_TRUE(a.ok() && b.ok());
  PinglistDiff diff = DiffPinglists(*a, *b);
  EXPECT_TRUE(diff.added.empty() && diff.removed.empty() && diff.rerated.empty());
}

TEST(PinglistTest, ANodeJoiningChangesOnlyStreamsItIsIn) {
  FabricInventory before = LeafSpine(4, 8, 2, 4);
  FabricInventory after = before;
  NodeSpec joiner{"gpu-2-new", "rack2", {}};
  joiner.nics = {{"mlx5_0", 0, "tor2", 400e9}, {"mlx5_1", 1, "tor2", 400e9}};
  after.nodes.push_back(joiner);
  auto a = BuildPinglists(before, {});
  auto b = BuildPinglists(after, {});
  ASSERT_TRUE(a.ok() && b.ok());
  PinglistDiff diff = DiffPinglists(*a, *b);
  EXPECT_FALSE(diff.added.empty());
  for (const PinglistEntry& e : diff.added) {
    EXPECT_TRUE(e.key.src_node == "gpu-2-new" || e.key.dst_node == "gpu-2-new")
        << ProbeKeyName(e.key);
  }
  // A removed stream is one the joiner took over (it became a rendezvous partner).
  for (const PinglistEntry& e : diff.removed) {
    EXPECT_EQ(e.kind, StreamKind::kRackToRack) << ProbeKeyName(e.key);
  }
  size_t total = Entries(*a).size();
  EXPECT_LT(diff.removed.size(), total / 20) << "most streams keep their pairs and ports";
  // And leaving again restores the original lists exactly.
  PinglistDiff back = DiffPinglists(*b, *a);
  EXPECT_EQ(back.added.size(), diff.removed.size());
  EXPECT_EQ(back.removed.size(), diff.added.size());
}

TEST(PinglistTest, BadInventoryIsNamed) {
  FabricInventory inventory = LeafSpine(2, 2, 1, 4);
  inventory.nodes[1].nics[0].tor = "tor-x";
  auto plan = BuildPinglists(inventory, {});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), ::testing::HasSubstr("tor-x"));
  inventory = LeafSpine(2, 2, 1, 4);
  inventory.nodes.push_back(inventory.nodes[0]);
  EXPECT_THAT(std::string(BuildPinglists(inventory, {}).status().message()),
              ::testing::HasSubstr("listed twice"));
  PinglistOptions options;
  options.max_nic_capacity_share = 2;
  EXPECT_THAT(std::string(BuildPinglists(LeafSpine(2, 2, 1, 4), options).status().message()),
              ::testing::HasSubstr("max_nic_capacity_share"));
}

}  // namespace
}  // namespace weft::pingmesh
