#include "agent/probe/pingmesh.h"

#include <string>

#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "rdma/fake_verbs.h"
#include "gtest/gtest.h"

namespace weft::agent::probe {
namespace {

weft::v1::Nic NicOf(uint64_t speed_mbps) {
  weft::v1::Nic nic;
  nic.set_device("mlx5_0");
  nic.set_speed_mbps(speed_mbps);
  return nic;
}

TEST(ProbeRateCapTest, OnePercentOfTheSlowestNicInWireBytes) {
  EXPECT_DOUBLE_EQ(kWireBytesPerProbe, 390);
  // 1 % of 1 Gb/s is 1.25 MB/s: 3205 probe exchanges of 390 bytes per second.
  EXPECT_NEAR(ProbeRateCap(100000, 0.01, {NicOf(400000), NicOf(1000)}), 1.25e6 / 390, 1e-6);
  // A 400G NIC's 1 % carries far more than the configured cap, which then holds.
  EXPECT_DOUBLE_EQ(ProbeRateCap(1000, 0.01, {NicOf(400000)}), 1000);
  // Unknown speeds bound nothing.
  EXPECT_DOUBLE_EQ(ProbeRateCap(1000, 0.01, {NicOf(0)}), 1000);
  EXPECT_DOUBLE_EQ(ProbeRateCap(1000, 0.01, {}), 1000);
}

TEST(PingmeshTest, OffWhenThePortIsZeroAndAPortInUseLeavesProbingOn) {
  FakeClock clock;
  prometheus::Registry registry;
  weft::v1::AgentConfig config;
  config.set_node_name("node-a");
  config.mutable_probe()->set_udp_port(0);
  absl::StatusOr<std::unique_ptr<Pingmesh>> off = Pingmesh::Create(config, &clock, &registry);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, nullptr);

  absl::StatusOr<std::unique_ptr<UdpResponder>> taken = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(taken.ok());
  config.mutable_probe()->set_udp_port((*taken)->port());
  config.mutable_probe()->set_bind_address("127.0.0.1");
  config.mutable_probe()->set_max_probes_per_second(500);
  config.mutable_probe()->set_max_nic_share(0.01);
  config.mutable_probe()->set_max_cpu_share(0.02);
  absl::StatusOr<std::unique_ptr<Pingmesh>> mesh = Pingmesh::Create(config, &clock, &registry);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  ASSERT_NE(*mesh, nullptr);
  EXPECT_EQ((*mesh)->udp_port(), 0u);  // not answering, but probing
  weft::v1::Pinglist list;
  list.set_version(1);
  list.set_window_ms(1000);
  list.set_timeout_ms(100);
  EXPECT_EQ((*mesh)->Apply(list).code(), absl::StatusCode::kFailedPrecondition);
  (*mesh)->Start({});
  EXPECT_DOUBLE_EQ((*mesh)->max_probes_per_second(), 500);
  EXPECT_TRUE((*mesh)->Apply(list).ok());
  EXPECT_EQ((*mesh)->pinglist_version(), 1u);
  (*mesh)->Stop();
}

// Agents sharing a host on one port: the second cannot answer, and says so in a metric.
TEST(PingmeshTest, APortInUseIsResponderUpZeroNamingThePort) {
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<UdpResponder>> taken = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(taken.ok()) << taken.status();
  const std::string port = std::to_string((*taken)->port());
  weft::v1::AgentConfig config;
  config.set_node_name("node-b");
  config.mutable_probe()->set_udp_port((*taken)->port());
  config.mutable_probe()->set_bind_address("127.0.0.1");
  prometheus::Registry second;
  absl::StatusOr<std::unique_ptr<Pingmesh>> mesh = Pingmesh::Create(config, &clock, &second);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ((*mesh)->udp_port(), 0u);
  EXPECT_EQ(MetricValue(second, "weft_agent_pingmesh_responder_up",
                        {{"node", "node-b"}, {"port", port}}),
            0);

  taken->reset();  // the port is free again: a new agent on it answers
  prometheus::Registry third;
  mesh = Pingmesh::Create(config, &clock, &third);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(std::to_string((*mesh)->udp_port()), port);
  EXPECT_EQ(MetricValue(third, "weft_agent_pingmesh_responder_up",
                        {{"node", "node-b"}, {"port", port}}),
            1);
}

// With verbs: a UD responder on each ACTIVE RoCE NIC that has a RoCE v2 IPv4 GID.
TEST(PingmeshTest, OpensAUdResponderPerActiveRoceNic) {
  FakeClock clock;
  prometheus::Registry registry;
  rdma::FakeFabric fabric;
  auto verbs = std::make_unique<rdma::FakeVerbs>(
      &fabric, std::vector<rdma::FakeDeviceConfig>{
                   rdma::FakeDeviceConfig::Roce("mlx5_0", 0x0a000001),
                   rdma::FakeDeviceConfig::Roce("mlx5_1", 0x0a000101)});
  weft::v1::AgentConfig config;
  config.set_node_name("node-a");
  config.mutable_probe()->set_udp_port(0);
  absl::StatusOr<std::unique_ptr<UdpResponder>> free_port = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(free_port.ok());
  const uint16_t port = (*free_port)->port();
  free_port->reset();
  config.mutable_probe()->set_udp_port(port);
  config.mutable_probe()->set_bind_address("127.0.0.1");
  config.mutable_probe()->set_max_probes_per_second(100);
  config.mutable_probe()->set_max_nic_share(0.01);
  config.mutable_probe()->set_max_cpu_share(0.02);
  absl::StatusOr<std::unique_ptr<Pingmesh>> mesh =
      Pingmesh::Create(config, &clock, &registry, std::move(verbs));
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  auto nic = [](const std::string& device, const std::string& gid, weft::v1::PortState state) {
    weft::v1::Nic n = NicOf(400000);
    n.set_device(device);
    n.set_port(1);
    n.set_link_layer("Ethernet");
    n.set_state(state);
    weft::v1::GidEntry* entry = n.add_gids();
    entry->set_index(3);
    entry->set_gid(gid);
    entry->set_type(weft::v1::GID_TYPE_ROCE_V2);
    return n;
  };
  (*mesh)->Start({nic("mlx5_0", "0000:0000:0000:0000:0000:ffff:0a00:0001",
                      weft::v1::PORT_STATE_ACTIVE),
                  nic("mlx5_1", "0000:0000:0000:0000:0000:ffff:0a00:0101",
                      weft::v1::PORT_STATE_DOWN)});
  EXPECT_NE((*mesh)->ud_qpn("mlx5_0"), 0u);
  EXPECT_EQ((*mesh)->ud_qpn("mlx5_1"), 0u);  // its port is down
  EXPECT_EQ((*mesh)->ud_qpn("mlx5_9"), 0u);
  (*mesh)->Stop();
}

}  // namespace
}  // namespace weft::agent::probe
