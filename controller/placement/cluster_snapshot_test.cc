// SnapshotFromNodes and the congestion score: node tables as Inventory::ListNodes
// returns them, turned into what the placement engine reads.
#include "controller/placement/cluster_snapshot.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "placement/topology.h"

namespace weft::controller {
namespace {

using weft::v1::NodeStatus;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

weft::v1::GidEntry Gid(uint32_t index, const std::string& gid, weft::v1::GidType type,
                       const std::string& netdev) {
  weft::v1::GidEntry entry;
  entry.set_index(index);
  entry.set_gid(gid);
  entry.set_type(type);
  entry.set_netdev(netdev);
  return entry;
}

// A node as the simulated agent registers it: NICs mlx5_0.. with the four GIDs of a
// RoCE port (v1/v2 link-local at 0/1, v1/v2 IPv4-mapped at 2/3), GPUs spread over them.
NodeStatus MakeNode(const std::string& name, const std::string& rack, const std::string& pod,
                    int nics = 2, int gpus = 4) {
  NodeStatus status;
  status.set_state(weft::v1::NODE_STATE_HEALTHY);
  status.set_health(weft::v1::NODE_STATE_HEALTHY);
  status.set_reporting(true);
  weft::v1::NodeInfo* info = status.mutable_info();
  info->set_name(name);
  info->set_rack(rack);
  info->set_pod(pod);
  for (int i = 0; i < nics; ++i) {
    weft::v1::Nic* nic = info->add_nics();
    nic->set_device("mlx5_" + std::to_string(i));
    nic->set_port(1);
    nic->set_netdev("ens" + std::to_string(i + 1) + "np0");
    nic->set_link_layer("Ethernet");
    const std::string ll = "fe80:0000:0000:0000:bace:f6ff:fe00:0001";
    const std::string v4 = "0000:0000:0000:0000:0000:ffff:0a00:0001";
    *nic->add_gids() = Gid(0, ll, weft::v1::GID_TYPE_IB_ROCE_V1, nic->netdev());
    *nic->add_gids() = Gid(1, ll, weft::v1::GID_TYPE_ROCE_V2, nic->netdev());
    *nic->add_gids() = Gid(2, v4, weft::v1::GID_TYPE_IB_ROCE_V1, nic->netdev());
    *nic->add_gids() = Gid(3, v4, weft::v1::GID_TYPE_ROCE_V2, nic->netdev());
    *status.add_nics()->mutable_nic() = *nic;
  }
  for (int g = 0; g < gpus; ++g) {
    weft::v1::Gpu* gpu = info->add_gpus();
    gpu->set_index(g);
    gpu->set_closest_nic("mlx5_" + std::to_string(g * nics / gpus));
  }
  return status;
}

// A sample with valid rates: `pause_share` of each second paused by the switch on
// priority 3 (rx; tx a tenth of it), `ecn_marked` of `rcv_packets` packets per second
// ECN-marked.
weft::v1::NicSample Sample(double pause_share, double ecn_marked, double rcv_packets) {
  weft::v1::NicSample sample;
  sample.set_rates_valid(true);
  sample.mutable_port_counters()->mutable_rcv_packets()->set_per_second(rcv_packets);
  sample.mutable_congestion()->mutable_np_ecn_marked_roce_packets()->set_per_second(
      ecn_marked);
  weft::v1::PriorityPfcCounters* quiet = sample.add_pfc();
  quiet->set_priority(0);
  weft::v1::PriorityPfcCounters* pfc = sample.add_pfc();
  pfc->set_priority(3);
  pfc->mutable_rx_pause_duration_us()->set_per_second(pause_share * 1e6);
  pfc->mutable_tx_pause_duration_us()->set_per_second(pause_share * 1e6 / 10);
  return sample;
}

TEST(NicCongestionTest, ScoreIsTheWorseOfPauseShareAndEcnRatioAgainstTheScale) {
  const CongestionScale scale;  // pause 0.5, ECN 0.1, at least 1000 packets/s
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0, 0, 1e6), scale), 0);
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0.25, 0, 1e6), scale), 0.5);
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0.1, 5e4, 1e6), scale), 0.5);  // 5% marked
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0.2, 1e4, 1e6), scale), 0.4);  // pause wins
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(1.5, 0, 1e6), scale), 1);      // clamped
  // A trickle of packets makes the ECN ratio noise: not counted.
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0, 500, 999), scale), 0);
}

TEST(NicCongestionTest, SamplesWithoutValidRatesScoreZero) {
  weft::v1::NicSample first = Sample(0.5, 0, 1e6);
  first.set_rates_valid(false);
  EXPECT_DOUBLE_EQ(NicCongestion(first, CongestionScale()), 0);
  weft::v1::NicSample errored = Sample(0.5, 0, 1e6);
  errored.set_error("cannot read counters");
  EXPECT_DOUBLE_EQ(NicCongestion(errored, CongestionScale()), 0);
}

TEST(NicCongestionTest, ScaleFollowsTheHealthThresholds) {
  HealthThresholds thresholds;
  thresholds.pfc_pause_share = 0.2;
  thresholds.ecn_mark_ratio = 0.5;
  const CongestionScale scale = CongestionScale::FromThresholds(thresholds);
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0.1, 0, 1e6), scale), 0.5);
  EXPECT_DOUBLE_EQ(NicCongestion(Sample(0, 1e5, 1e6), scale), 0.2);
}

TEST(NodeCongestionTest, BusiestNicCountsAndSilentNodesScoreZero) {
  NodeStatus node = MakeNode("n1", "r1", "p1");
  *node.mutable_nics(0)->mutable_latest() = Sample(0.05, 0, 1e6);
  *node.mutable_nics(1)->mutable_latest() = Sample(0.3, 0, 1e6);
  EXPECT_DOUBLE_EQ(NodeCongestion(node, CongestionScale()), 0.6);
  node.set_reporting(false);
  EXPECT_DOUBLE_EQ(NodeCongestion(node, CongestionScale()), 0);
}

TEST(RoceV2GidIndexTest, PrefersIpv4MappedThenGlobalNeverLinkLocalOrV1) {
  weft::v1::Nic nic = MakeNode("n1", "r1", "p1", 1).info().nics(0);
  EXPECT_EQ(RoceV2GidIndex(nic), 3u);

  // Only link-local RoCE v2 and an IPv6 global one: the global one.
  nic.clear_gids();
  *nic.add_gids() = Gid(1, "fe80:0000:0000:0000:0000:0000:0000:0001",
                        weft::v1::GID_TYPE_ROCE_V2, nic.netdev());
  *nic.add_gids() = Gid(5, "fd00:0000:0000:0000:0000:0000:0000:0007",
                        weft::v1::GID_TYPE_ROCE_V2, nic.netdev());
  EXPECT_EQ(RoceV2GidIndex(nic), 5u);

  // An IPv4-mapped GID of another netdev (a macvlan, say) is not the port's own.
  *nic.add_gids() = Gid(4, "0000:0000:0000:0000:0000:ffff:0a00:0002",
                        weft::v1::GID_TYPE_ROCE_V2, "macvlan0");
  EXPECT_EQ(RoceV2GidIndex(nic), 5u);

  nic.clear_gids();
  *nic.add_gids() = Gid(2, "0000:0000:0000:0000:0000:ffff:0a00:0001",
                        weft::v1::GID_TYPE_IB_ROCE_V1, nic.netdev());
  *nic.add_gids() = Gid(1, "fe80:0000:0000:0000:0000:0000:0000:0001",
                        weft::v1::GID_TYPE_ROCE_V2, nic.netdev());
  EXPECT_EQ(RoceV2GidIndex(nic), std::nullopt);
}

TEST(SnapshotFromNodesTest, HealthyNodeCarriesRackPodGpusNicsAndGid) {
  NodeStatus node = MakeNode("gpu-a01", "rack-a", "pod-1", 2, 8);
  *node.mutable_nics(1)->mutable_latest() = Sample(0.25, 0, 1e6);
  const InventorySnapshot out = SnapshotFromNodes({node}, CongestionScale(), kNow);
  EXPECT_TRUE(out.omitted.empty());
  EXPECT_EQ(out.snapshot.taken_at_unix_s(), 1'800'000'000);
  ASSERT_EQ(out.snapshot.nodes_size(), 1);
  const weft::v1::SnapshotNode& n = out.snapshot.nodes(0);
  EXPECT_EQ(n.name(), "gpu-a01");
  EXPECT_EQ(n.rack(), "rack-a");
  EXPECT_EQ(n.pod(), "pod-1");
  ASSERT_TRUE(n.has_healthy());
  EXPECT_TRUE(n.healthy());
  EXPECT_FALSE(n.drained());
  EXPECT_DOUBLE_EQ(n.congestion(), 0.5);
  ASSERT_EQ(n.nics_size(), 2);
  EXPECT_EQ(n.nics(1).device(), "mlx5_1");
  EXPECT_EQ(n.nics(1).port(), 1u);
  EXPECT_EQ(n.nics(1).netdev(), "ens2np0");
  ASSERT_TRUE(n.nics(1).has_roce_v2_gid_index());
  EXPECT_EQ(n.nics(1).roce_v2_gid_index(), 3u);
  ASSERT_EQ(n.gpus_size(), 8);
  EXPECT_EQ(n.gpus(3).closest_nic(), "mlx5_0");
  EXPECT_EQ(n.gpus(4).closest_nic(), "mlx5_1");
  EXPECT_TRUE(placement::Topology::Build(out.snapshot).ok());
}

TEST(SnapshotFromNodesTest, OnlyHealthyReportingUndrainedNodesAreEligible) {
  NodeStatus degraded = MakeNode("degraded", "r1", "p1");
  degraded.set_state(weft::v1::NODE_STATE_DEGRADED);
  degraded.set_health(weft::v1::NODE_STATE_DEGRADED);
  NodeStatus down = MakeNode("down", "r1", "p1");
  down.set_state(weft::v1::NODE_STATE_DOWN);
  down.set_reporting(false);
  NodeStatus drained = MakeNode("drained", "r1", "p1");
  drained.set_state(weft::v1::NODE_STATE_DRAINED);
  NodeStatus drained_down = MakeNode("drained-down", "r1", "p1");
  drained_down.set_state(weft::v1::NODE_STATE_DRAINED);
  drained_down.set_reporting(false);
  const InventorySnapshot out = SnapshotFromNodes(
      {MakeNode("ok", "r1", "p1"), degraded, down, drained, drained_down}, CongestionScale(),
      kNow);
  ASSERT_EQ(out.snapshot.nodes_size(), 5);
  auto node = [&](int i) { return out.snapshot.nodes(i); };
  EXPECT_TRUE(node(0).healthy() && !node(0).drained());
  EXPECT_FALSE(node(1).healthy());
  EXPECT_FALSE(node(1).drained());
  EXPECT_FALSE(node(2).healthy());
  EXPECT_TRUE(node(3).drained());
  EXPECT_TRUE(node(3).healthy());  // its own health, for exports; drained keeps it out
  EXPECT_TRUE(node(4).drained());
  EXPECT_FALSE(node(4).healthy());
}

TEST(SnapshotFromNodesTest, NodeWithoutRackIsOmittedWithAFix) {
  const InventorySnapshot out = SnapshotFromNodes(
      {MakeNode("n1", "r1", "p1"), MakeNode("lost", "", "p1")}, CongestionScale(), kNow);
  ASSERT_EQ(out.snapshot.nodes_size(), 1);
  ASSERT_EQ(out.omitted.size(), 1u);
  EXPECT_EQ(out.omitted[0].node(), "lost");
  EXPECT_NE(out.omitted[0].reason().find("--rack"), std::string::npos);
}

// Sets the LLDP neighbor of each NIC of `node`: switches[i] for NIC i.
NodeStatus WithLldp(NodeStatus node, const std::vector<std::string>& switches) {
  for (size_t i = 0; i < switches.size(); ++i) {
    weft::v1::LldpNeighbor* neighbor =
        node.mutable_info()->mutable_nics(static_cast<int>(i))->mutable_lldp_neighbor();
    neighbor->set_chassis_name(switches[i]);
    neighbor->set_port_id("swp" + std::to_string(i + 1));
  }
  return node;
}

TEST(SnapshotFromNodesTest, NodeWithoutRackGetsItsRackFromLldp) {
  const InventorySnapshot out = SnapshotFromNodes(
      {WithLldp(MakeNode("tor-node", "", "p1"), {"tor-7", "tor-7"}),
       WithLldp(MakeNode("rail-node", "", "p1"), {"leaf-r0", "leaf-r1"}),
       WithLldp(MakeNode("registered", "r1", "p1"), {"tor-9", "tor-9"}),
       WithLldp(MakeNode("silent", "", "p1"), {"", ""})},
      CongestionScale(), kNow);
  ASSERT_EQ(out.snapshot.nodes_size(), 3);
  EXPECT_EQ(out.snapshot.nodes(0).rack(), "tor-7");
  EXPECT_TRUE(out.snapshot.nodes(0).rack_from_lldp());
  EXPECT_EQ(out.snapshot.nodes(1).rack(), "leaf-r0+leaf-r1");
  EXPECT_TRUE(out.snapshot.nodes(1).rack_from_lldp());
  EXPECT_EQ(out.snapshot.nodes(2).rack(), "r1");  // registration wins over LLDP
  EXPECT_FALSE(out.snapshot.nodes(2).rack_from_lldp());
  EXPECT_EQ(out.snapshot.nodes(0).nics(1).lldp_switch(), "tor-7");
  EXPECT_EQ(out.snapshot.nodes(0).nics(1).lldp_port(), "swp2");
  ASSERT_EQ(out.omitted.size(), 1u);
  EXPECT_EQ(out.omitted[0].node(), "silent");
  EXPECT_NE(out.omitted[0].reason().find("no LLDP neighbor"), std::string::npos);
  absl::StatusOr<placement::Topology> topology = placement::Topology::Build(out.snapshot);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->racks().size(), 3u);
}

TEST(SnapshotFromNodesTest, RackNameInTwoPodsBecomesTwoQualifiedRacks) {
  const InventorySnapshot out = SnapshotFromNodes(
      {MakeNode("a", "r1", "p1"), MakeNode("b", "r1", "p2"), MakeNode("c", "r2", "p2")},
      CongestionScale(), kNow);
  ASSERT_EQ(out.snapshot.nodes_size(), 3);
  EXPECT_EQ(out.snapshot.nodes(0).rack(), "p1/r1");
  EXPECT_EQ(out.snapshot.nodes(1).rack(), "p2/r1");
  EXPECT_EQ(out.snapshot.nodes(2).rack(), "r2");
  absl::StatusOr<placement::Topology> topology = placement::Topology::Build(out.snapshot);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->racks().size(), 3u);
}

TEST(SnapshotFromNodesTest, InconsistentHardwareIsRepairedNotFatal) {
  NodeStatus node = MakeNode("n1", "r1", "p1", 2, 2);
  weft::v1::NodeInfo* info = node.mutable_info();
  info->mutable_gpus(1)->set_closest_nic("mlx5_9");  // no such NIC: rail fallback
  weft::v1::Gpu* repeated = info->add_gpus();         // index 0 again: dropped
  repeated->set_index(0);
  weft::v1::Nic* second_port = info->add_nics();      // mlx5_0 port 2: dropped
  second_port->set_device("mlx5_0");
  second_port->set_port(2);
  weft::v1::Nic* infiniband = info->add_nics();       // not RoCE: dropped
  infiniband->set_device("mlx5_ib0");
  infiniband->set_port(1);
  infiniband->set_link_layer("InfiniBand");
  info->mutable_gpus(0)->set_closest_nic("mlx5_ib0");

  const InventorySnapshot out = SnapshotFromNodes({node}, CongestionScale(), kNow);
  ASSERT_EQ(out.snapshot.nodes_size(), 1);
  const weft::v1::SnapshotNode& n = out.snapshot.nodes(0);
  ASSERT_EQ(n.nics_size(), 2);
  EXPECT_EQ(n.nics(0).port(), 1u);
  EXPECT_EQ(n.nics(1).device(), "mlx5_1");
  ASSERT_EQ(n.gpus_size(), 2);
  EXPECT_EQ(n.gpus(0).closest_nic(), "");
  EXPECT_EQ(n.gpus(1).closest_nic(), "");
  absl::StatusOr<placement::Topology> topology = placement::Topology::Build(out.snapshot);
  EXPECT_TRUE(topology.ok()) << topology.status();
}

}  // namespace
}  // namespace weft::controller
