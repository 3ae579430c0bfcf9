#include "sim/fabric.h"

#include <map>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

LeafSpineOptions SmallLeafSpine() {
  LeafSpineOptions o;
  o.racks = 3;
  o.nodes_per_rack = 4;
  o.nics_per_node = 2;
  o.nic_bps = 100e9;
  o.uplinks_per_tor = 4;
  o.oversubscription = 2;
  return o;
}

TEST(LeafSpineTest, BuildsRacksNicsAndOversubscribedUplinks) {
  const Fabric fabric = BuildLeafSpine(SmallLeafSpine()).value();
  EXPECT_EQ(fabric.num_nodes(), 12);
  EXPECT_EQ(fabric.nics().size(), 24u);
  EXPECT_EQ(fabric.switches().size(), 4u + 3u);  // spines, then ToRs
  // 3 ToRs × 4 uplinks + 24 NIC cables, two directed links each.
  EXPECT_EQ(fabric.links().size(), 2u * (12 + 24));
  double up_bps = 0, down_bps = 0;
  const int tor0 = fabric.nics()[0].leaf;
  for (const Link& link : fabric.links()) {
    if (link.from.kind == Vertex::Kind::kSwitch && link.from.id == tor0) {
      (link.to.kind == Vertex::Kind::kSwitch ? up_bps : down_bps) += link.capacity_bps;
    }
  }
  EXPECT_DOUBLE_EQ(down_bps, 8 * 100e9);
  EXPECT_DOUBLE_EQ(up_bps, 8 * 100e9 / 2);  // 2:1
  // NICs 0-7 are rack 0's, node = NIC / 2, index = NIC % 2.
  EXPECT_EQ(fabric.nics()[5].node, 2);
  EXPECT_EQ(fabric.nics()[5].index, 1);
  EXPECT_EQ(fabric.nics()[8].leaf, fabric.nics()[15].leaf);
  EXPECT_NE(fabric.nics()[7].leaf, fabric.nics()[8].leaf);
}

TEST(LeafSpineTest, PathsInsideARackAndAcrossTheSpine) {
  Fabric fabric = BuildLeafSpine(SmallLeafSpine()).value();
  const std::vector<int> local = fabric.EcmpPath({0, 3, 50000}).value();
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[0], fabric.nics()[0].uplink);
  EXPECT_EQ(local[1], fabric.nics()[3].downlink);
  const std::vector<int> remote = fabric.EcmpPath({0, 20, 50000}).value();
  ASSERT_EQ(remote.size(), 4u);  // NIC → ToR → spine → ToR → NIC
  EXPECT_EQ(fabric.switches()[fabric.links()[remote[1]].to.id].tier, SwitchTier::kSpine);
  for (size_t i = 1; i < remote.size(); ++i) {
    EXPECT_TRUE(fabric.links()[remote[i - 1]].to == fabric.links()[remote[i]].from);
  }
  EXPECT_DOUBLE_EQ(fabric.PathDelaySeconds(remote), 2 * 1e-7 + 2 * 5e-7);
}

TEST(EcmpTest, SameTupleSamePathAndPortsSpreadEvenly) {
  LeafSpineOptions o = SmallLeafSpine();
  o.uplinks_per_tor = 8;
  o.spines = 4;  // two parallel links to each spine: 8 equal-cost next hops at the ToR
  Fabric fabric = BuildLeafSpine(o).value();
  std::map<int, int> per_uplink;
  constexpr int kPorts = 16000;
  for (int port = 0; port < kPorts; ++port) {
    const FlowTuple flow{1, 17, static_cast<uint16_t>(49152 + port % 16384)};
    const std::vector<int> path = fabric.EcmpPath(flow).value();
    EXPECT_EQ(fabric.EcmpPath(flow).value(), path);
    ++per_uplink[path[1]];
  }
  ASSERT_EQ(per_uplink.size(), 8u);
  // Binomial(16000, 1/8): mean 2000, σ ≈ 42; ±10 % is ±4.8σ.
  for (const auto& [link, count] : per_uplink) {
    EXPECT_NEAR(count, kPorts / 8, kPorts / 80) << "uplink " << link;
  }
}

TEST(EcmpTest, HashDependsOnEveryFieldAndTheSwitch) {
  const uint64_t base = EcmpHash(NicAddress(1), NicAddress(2), 49152, 7);
  EXPECT_EQ(base, EcmpHash(NicAddress(1), NicAddress(2), 49152, 7));
  EXPECT_NE(base, EcmpHash(NicAddress(3), NicAddress(2), 49152, 7));
  EXPECT_NE(base, EcmpHash(NicAddress(1), NicAddress(3), 49152, 7));
  EXPECT_NE(base, EcmpHash(NicAddress(1), NicAddress(2), 49153, 7));
  EXPECT_NE(base, EcmpHash(NicAddress(1), NicAddress(2), 49152, 8));
  EXPECT_EQ(NicAddress(0), 0x0A000001u);
}

TEST(EcmpTest, SpinesDoNotPolarise) {
  // Two tiers of choice would repeat the same pick without the per-switch seed; here
  // the ToR's pick and the low bits of the spine-tier hash must be independent: every
  // (uplink, spine-hash parity) pair occurs.
  std::set<std::pair<int, int>> seen;
  for (int port = 0; port < 256; ++port) {
    const uint16_t p = static_cast<uint16_t>(49152 + port);
    seen.insert({static_cast<int>(EcmpHash(NicAddress(0), NicAddress(9), p, 4) % 4),
                 static_cast<int>(EcmpHash(NicAddress(0), NicAddress(9), p, 0) % 4)});
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(RailTest, NicIOfEveryNodeOnRailLeafI) {
  RailOptions o;
  o.nodes = 12;
  o.nodes_per_group = 8;  // a full group and a partial one
  o.nics_per_node = 4;
  o.nic_bps = 400e9;
  o.uplinks_per_leaf = 4;
  o.spines = 2;
  Fabric fabric = BuildRailOptimized(o).value();
  EXPECT_EQ(fabric.nics().size(), 48u);
  EXPECT_EQ(fabric.switches().size(), 2u + 2 * 4);
  for (const Nic& nic : fabric.nics()) {
    const std::string& leaf = fabric.switches()[nic.leaf].name;
    EXPECT_EQ(leaf, "rail" + std::to_string(nic.index) + "." + std::to_string(nic.node / 8));
  }
  // Same rail, same group: one leaf. Same rail, other group: through a spine.
  EXPECT_EQ(fabric.EcmpPath({1, 1 + 4 * 5, 50000}).value().size(), 2u);
  EXPECT_EQ(fabric.EcmpPath({1, 1 + 4 * 9, 50000}).value().size(), 4u);
  // Uplinks: 8 nodes · 400 Gb/s / 4 uplinks.
  const Link& up = fabric.links()[fabric.EcmpPath({1, 1 + 4 * 9, 50000}).value()[1]];
  EXPECT_DOUBLE_EQ(up.capacity_bps, 800e9);
}

TEST(FabricValidationTest, RefusesBadInputNamingTheParameter) {
  LeafSpineOptions o = SmallLeafSpine();
  o.oversubscription = 0.5;
  EXPECT_THAT(BuildLeafSpine(o).status().message(),
              AllOf(HasSubstr("leaf-spine"), HasSubstr("oversubscription = 0.5"),
                    HasSubstr("[1, 64]")));
  o = SmallLeafSpine();
  o.nic_bps = 100;
  EXPECT_THAT(BuildLeafSpine(o).status().message(),
              AllOf(HasSubstr("nic_bps = 100"), HasSubstr("100-400 Gb/s")));
  o = SmallLeafSpine();
  o.spines = 5;
  EXPECT_THAT(BuildLeafSpine(o).status().message(),
              AllOf(HasSubstr("spines = 5"), HasSubstr("uplinks_per_tor = 4")));
  o = SmallLeafSpine();
  o.racks = 0;
  EXPECT_THAT(BuildLeafSpine(o).status().message(), HasSubstr("racks = 0"));
  RailOptions r;
  r.nics_per_node = 17;
  EXPECT_THAT(BuildRailOptimized(r).status().message(),
              AllOf(HasSubstr("rail-optimised"), HasSubstr("nics_per_node = 17"),
                    HasSubstr("[1, 16]")));

  Fabric fabric = BuildLeafSpine(SmallLeafSpine()).value();
  EXPECT_THAT(fabric.EcmpPath({0, 24, 1}).status().message(),
              AllOf(HasSubstr("dst_nic = 24"), HasSubstr("[0, 23]")));
  EXPECT_THAT(fabric.EcmpPath({-1, 2, 1}).status().message(), HasSubstr("src_nic = -1"));
  EXPECT_THAT(fabric.EcmpPath({3, 3, 1}).status().message(), HasSubstr("to itself"));
}

}  // namespace
}  // namespace weft::sim
