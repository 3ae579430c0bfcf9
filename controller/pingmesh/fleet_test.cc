#include "controller/pingmesh/fleet.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

using ::testing::ElementsAre;

std::string Gid(int host) {
  return "0000:0000:0000:0000:0000:ffff:0a00:" + absl::StrCat(absl::Hex(host, absl::kZeroPad4));
}

weft::v1::NodeStatus Node(const std::string& name, const std::string& rack, int first_host,
                          int nics, uint32_t udp_port = 7412) {
  weft::v1::NodeStatus status;
  status.set_reporting(true);
  weft::v1::NodeInfo* info = status.mutable_info();
  info->set_name(name);
  info->set_rack(rack);
  info->set_probe_udp_port(udp_port);
  for (int i = 0; i < nics; ++i) {
    weft::v1::Nic* nic = info->add_nics();
    nic->set_device("mlx5_" + std::to_string(i));
    nic->set_speed_mbps(400000);
    weft::v1::GidEntry* v1 = nic->add_gids();
    v1->set_gid(Gid(first_host + i));
    v1->set_type(weft::v1::GID_TYPE_IB_ROCE_V1);
    weft::v1::GidEntry* v2 = nic->add_gids();
    v2->set_index(1);
    v2->set_gid(Gid(first_host + i));
    v2->set_type(weft::v1::GID_TYPE_ROCE_V2);
  }
  return status;
}

TEST(Ipv4OfGidTest, OnlyIpv4MappedGidsHaveAnAddress) {
  EXPECT_EQ(Ipv4OfGid("0000:0000:0000:0000:0000:ffff:0a00:0102"), "10.0.1.2");
  EXPECT_EQ(Ipv4OfGid("0000:0000:0000:0000:0000:ffff:c0a8:ff01"), "192.168.255.1");
  EXPECT_EQ(Ipv4OfGid("fe80:0000:0000:0000:0202:c9ff:fe00:0001"), std::nullopt);
  EXPECT_EQ(Ipv4OfGid("0000:0000:0000:0000:0000:fffe:0a00:0102"), std::nullopt);
  EXPECT_EQ(Ipv4OfGid("::ffff:10.0.0.1"), std::nullopt);
  EXPECT_EQ(Ipv4OfGid("zzzz:0000:0000:0000:0000:ffff:0a00:0001"), std::nullopt);
}

TEST(FleetTest, LeavesOutWhatCannotBeProbedAndSaysWhy) {
  std::vector<weft::v1::NodeStatus> nodes = {Node("a1", "rack-a", 1, 2),
                                             Node("a2", "rack-a", 3, 1, /*udp_port=*/0),
                                             Node("a3", "", 5, 1), Node("a4", "rack-a", 7, 2)};
  nodes[2].mutable_info()->mutable_nics(0)->clear_gids();
  nodes.push_back(Node("a5", "rack-a", 9, 1));
  nodes.back().set_reporting(false);
  // a4's NIC 1 heard its switch over LLDP.
  nodes[3].mutable_info()->mutable_nics(1)->mutable_lldp_neighbor()->set_chassis_name("leaf-7");
  const Fleet fleet = FleetFromNodes(nodes, 4);
  EXPECT_THAT(fleet.unprobed,
              ElementsAre("a2: its agent does not answer probes (probe.udp_port is 0)",
                          "a3/mlx5_0: no RoCE v2 GID with an IPv4 address", "a5: not reporting"));
  ASSERT_EQ(fleet.inventory.nodes.size(), 2u);
  EXPECT_EQ(fleet.inventory.nodes[1].nics[1].tor, "leaf-7");
  EXPECT_EQ(fleet.inventory.nodes[1].nics[0].tor, "rack-a/tor");
  EXPECT_EQ(fleet.inventory.nodes[1].nics[1].rail, 1);
  EXPECT_DOUBLE_EQ(fleet.inventory.nodes[1].nics[1].bps, 400e9);
  ASSERT_EQ(fleet.inventory.tors.size(), 2u);
  EXPECT_EQ(fleet.inventory.tors[0].uplinks, 4);
  EXPECT_EQ(fleet.nics.at("a4/mlx5_1").address, "10.0.0.8");

  // The fingerprint moves with what the pinglists depend on, and only with that.
  nodes[0].set_drain_reason("maintenance");
  EXPECT_EQ(FleetFromNodes(nodes, 4).fingerprint, fleet.fingerprint);
  nodes[0].mutable_info()->mutable_nics(0)->mutable_lldp_neighbor()->set_chassis_name("leaf-1");
  EXPECT_NE(FleetFromNodes(nodes, 4).fingerprint, fleet.fingerprint);
}

TEST(FleetTest, PinglistsNameEachPeerByAddressPortAndTransport) {
  std::vector<weft::v1::NodeStatus> nodes = {Node("a1", "rack-a", 1, 1), Node("a2", "rack-a", 2, 1)};
  nodes[1].mutable_info()->set_probe_udp_port(9000);
  Fleet fleet = FleetFromNodes(nodes, 1);
  pingmesh::PinglistOptions options;
  options.traffic_class = 26;
  absl::StatusOr<pingmesh::PinglistPlan> plan = pingmesh::BuildPinglists(fleet.inventory, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  PinglistWire wire{500, 800};
  auto lists = PinglistProtos(*plan, fleet, wire);
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0].first, "a1");
  const weft::v1::Pinglist& a1 = lists[0].second;
  EXPECT_EQ(a1.window_ms(), 500u);
  EXPECT_EQ(a1.timeout_ms(), 800u);
  ASSERT_EQ(a1.peers_size(), 1);
  const weft::v1::ProbePeer& peer = a1.peers(0);
  EXPECT_EQ(peer.node(), "a2");
  EXPECT_EQ(peer.nic(), "mlx5_0");
  EXPECT_EQ(peer.address(), "10.0.0.2");
  EXPECT_EQ(peer.udp_port(), 9000u);
  EXPECT_EQ(peer.source_address(), "10.0.0.1");
  EXPECT_EQ(peer.dscp(), 26u);
  EXPECT_EQ(peer.transport(), weft::v1::PROBE_TRANSPORT_UDP);
  EXPECT_GE(peer.source_ports_size(), 1);
  EXPECT_NEAR(peer.probes_per_second(), plan->local_probes_per_s * peer.source_ports_size(),
              1e-9);

  // Both NICs with a UD responder: RDMA UD to the peer's GID and QP.
  nodes[0].mutable_info()->mutable_nics(0)->set_probe_ud_qpn(17);
  nodes[1].mutable_info()->mutable_nics(0)->set_probe_ud_qpn(23);
  fleet = FleetFromNodes(nodes, 1);
  lists = PinglistProtos(*plan, fleet, wire);
  const weft::v1::ProbePeer& ud = lists[0].second.peers(0);
  EXPECT_EQ(ud.transport(), weft::v1::PROBE_TRANSPORT_RDMA_UD);
  EXPECT_EQ(ud.ud_qpn(), 23u);
  EXPECT_EQ(ud.gid(), Gid(2));
}

}  // namespace
}  // namespace weft::controller
