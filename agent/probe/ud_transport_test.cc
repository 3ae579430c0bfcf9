#include "agent/probe/ud_transport.h"

#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/probe/prober.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"
#include "rdma/gid_selection.h"
#include "rdma/verbs_ibv.h"

namespace weft::agent::probe {
namespace {

constexpr uint32_t kIpA = 0x0a000001;  // 10.0.0.1
constexpr uint32_t kIpB = 0x0a000002;

struct Node {
  std::unique_ptr<rdma::FakeVerbs> verbs;
  std::unique_ptr<UdProbeTransport> transport;
};

Node MakeNode(rdma::FakeFabric* fabric, uint32_t ip, bool timestamps = true) {
  Node node;
  rdma::FakeDeviceConfig device = rdma::FakeDeviceConfig::Roce("mlx5_0", ip);
  device.completion_timestamps = timestamps;
  node.verbs = std::make_unique<rdma::FakeVerbs>(fabric, std::vector<rdma::FakeDeviceConfig>{device});
  UdTransportOptions options;
  options.device = "mlx5_0";
  options.sgid_index = 3;
  options.local_gid = rdma::Gid::FromIpv4(ip);
  absl::StatusOr<std::unique_ptr<UdProbeTransport>> transport =
      UdProbeTransport::Create(node.verbs.get(), options);
  EXPECT_TRUE(transport.ok()) << transport.status();
  if (transport.ok()) node.transport = *std::move(transport);
  return node;
}

ProbeFlow FlowTo(const Node& peer, uint32_t peer_ip, uint16_t sport) {
  ProbeFlow flow;
  flow.peer_node = "node-b";
  flow.peer_nic = "mlx5_0";
  flow.peer_address = "10.0.0.2";
  flow.transport = weft::v1::PROBE_TRANSPORT_RDMA_UD;
  flow.peer_gid = rdma::Gid::FromIpv4(peer_ip).ToString();
  flow.peer_qpn = peer.transport->qp_num();
  flow.source_port = sport;
  flow.dscp = 26;
  return flow;
}

// With the NICs' clock: a 3 µs wire each way and a responder that takes 50 µs between
// the probe's arrival and its ACK1's send. ACK1 measures the whole span; ACK2 takes the
// responder's 50 µs out, leaving the 6 µs of network.
TEST(UdTransportTest, TwoAcksSeparateTheNetworkFromTheResponder) {
  rdma::FakeFabric fabric;
  fabric.SetOneWayLatency(absl::Microseconds(3));
  Node a = MakeNode(&fabric, kIpA);
  Node b = MakeNode(&fabric, kIpB);
  ASSERT_NE(a.transport, nullptr);
  ASSERT_NE(b.transport, nullptr);
  EXPECT_TRUE(a.transport->hardware_timestamps());
  ASSERT_TRUE(a.transport->Send(FlowTo(b, kIpB, 50001), 7).ok());
  fabric.AdvanceDeviceTime(absl::Microseconds(50));  // the responder is busy
  EXPECT_TRUE(b.transport->Receive(absl::ZeroDuration()).empty());  // it answers, measures nothing
  EXPECT_EQ(b.transport->probes_answered(), 1u);
  std::vector<ProbeMeasurement> got = a.transport->Receive(absl::ZeroDuration());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FALSE(got[0].final);
  EXPECT_EQ(got[0].network_rtt, absl::Microseconds(56));  // no responder time known yet
  const ProbeMeasurement& m = got[1];
  EXPECT_TRUE(m.final);
  EXPECT_EQ(m.seq, 7u);
  EXPECT_EQ(m.network_rtt, absl::Microseconds(6));
  EXPECT_EQ(m.responder_host_delay, absl::Microseconds(50));
  EXPECT_EQ(m.timestamps, TimestampSource::kHardware);
  // The responder saw the probe's source port and class (they came in the probe).
  EXPECT_EQ(m.source_port_at_responder, 50001);
  EXPECT_EQ(m.dscp_at_responder, 26);
}

TEST(UdTransportTest, WithoutCompletionTimestampsUserTimeStandsIn) {
  rdma::FakeFabric fabric;
  Node a = MakeNode(&fabric, kIpA, /*timestamps=*/false);
  Node b = MakeNode(&fabric, kIpB, /*timestamps=*/false);
  ASSERT_NE(a.transport, nullptr);
  EXPECT_FALSE(a.transport->hardware_timestamps());
  ASSERT_TRUE(a.transport->Send(FlowTo(b, kIpB, 50001), 1).ok());
  b.transport->Receive(absl::ZeroDuration());
  std::vector<ProbeMeasurement> got = a.transport->Receive(absl::ZeroDuration());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].timestamps, TimestampSource::kUser);
  EXPECT_GE(got[1].network_rtt, absl::ZeroDuration());
}

// The Prober over UD on the fake clock, with the fabric black-holing one RoCE source
// port (chosen by the AH's flow label): that flow's probes are all lost.
TEST(UdTransportTest, ProberCountsABlackHoledSourcePortLost) {
  rdma::FakeFabric fabric;
  Node a = MakeNode(&fabric, kIpA);
  Node b = MakeNode(&fabric, kIpB);
  ASSERT_NE(b.transport, nullptr);
  fabric.DropUdSourcePort(50002);
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  prometheus::Registry registry;
  ProberOptions options;
  options.node_name = "node-a";
  options.max_cpu_share = 1.0;
  // UDP is unused here: the UD transport stands in for both.
  Prober prober(a.transport.get(), {{"mlx5_0", a.transport.get()}}, &clock, options, &registry);
  weft::v1::Pinglist list;
  list.set_version(2);
  list.set_window_ms(1000);
  list.set_timeout_ms(100);
  weft::v1::ProbePeer* peer = list.add_peers();
  peer->set_node("node-b");
  peer->set_address("10.0.0.2");
  peer->set_udp_port(7412);
  peer->set_transport(weft::v1::PROBE_TRANSPORT_RDMA_UD);
  peer->set_gid(rdma::Gid::FromIpv4(kIpB).ToString());
  peer->set_ud_qpn(b.transport->qp_num());
  peer->add_source_ports(50001);
  peer->add_source_ports(50002);
  peer->set_probes_per_second(20);
  ASSERT_TRUE(prober.Apply(list).ok());
  prober.Start();
  // The responder answers whenever the test lets it; the prober's receiver polls.
  const absl::Time end = clock.Now() + absl::Milliseconds(1200);
  while (clock.Now() < end) {
    ASSERT_TRUE(clock.AwaitWaiters(1, absl::Seconds(10)));
    b.transport->Receive(absl::ZeroDuration());
    const absl::Time limit = absl::Now() + absl::Seconds(10);
    while (prober.in_flight(50001) > 0 && absl::Now() < limit) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_EQ(prober.in_flight(50001), 0u);
    ASSERT_TRUE(clock.AdvanceToNextDeadline(absl::Seconds(10)).has_value());
  }
  ASSERT_TRUE(clock.AwaitWaiters(1, absl::Seconds(10)));
  std::vector<weft::v1::ProbeWindow> windows = prober.TakeWindows();
  prober.Stop();
  ASSERT_EQ(windows.size(), 2u);
  for (const weft::v1::ProbeWindow& w : windows) {
    SCOPED_TRACE(w.ShortDebugString());
    EXPECT_EQ(w.sent(), 10u);
    EXPECT_EQ(w.transport(), weft::v1::PROBE_TRANSPORT_RDMA_UD);
    if (w.source_port() == 50002) {
      EXPECT_EQ(w.lost(), 10u);
    } else {
      EXPECT_EQ(w.lost(), 0u);
      EXPECT_EQ(w.timestamps(), "hardware");
      EXPECT_DOUBLE_EQ(w.rtt_p50_us(), 4);  // 2 µs each way (the fake's default)
    }
  }
}

// On a machine with an RDMA device: the first RoCE v2 port probes itself over UD.
TEST(UdTransportTest, RealDeviceProbesItself) {
  rdma::IbvVerbs verbs;
  absl::StatusOr<std::vector<rdma::DeviceInfo>> devices = verbs.ListDevices();
  if (!devices.ok() || devices->empty()) {
    GTEST_SKIP() << "skipped: ibv_get_device_list finds no RDMA device ("
                 << (devices.ok() ? verbs.NoDeviceReason() : devices.status().ToString())
                 << "); the UD transport is tested against the fake verbs only";
  }
  const std::string device = (*devices)[0].name;
  absl::StatusOr<std::unique_ptr<rdma::VerbsContext>> context = verbs.OpenDevice(device);
  ASSERT_TRUE(context.ok()) << context.status();
  absl::StatusOr<std::vector<rdma::GidEntry>> table = verbs.QueryGidTable(context->get());
  ASSERT_TRUE(table.ok()) << table.status();
  absl::StatusOr<rdma::GidEntry> gid = rdma::SelectRoceV2Gid(*table, rdma::GidQuery{});
  if (!gid.ok()) GTEST_SKIP() << "skipped: " << device << " has no RoCE v2 IPv4 GID: " << gid.status();
  context->reset();
  UdTransportOptions options;
  options.device = device;
  options.port = static_cast<uint8_t>(gid->port);
  options.sgid_index = static_cast<uint8_t>(gid->index);
  options.local_gid = gid->gid;
  absl::StatusOr<std::unique_ptr<UdProbeTransport>> transport =
      UdProbeTransport::Create(&verbs, options);
  ASSERT_TRUE(transport.ok()) << transport.status();
  ProbeFlow self;
  self.peer_node = "self";
  self.transport = weft::v1::PROBE_TRANSPORT_RDMA_UD;
  self.peer_gid = gid->gid.ToString();
  self.peer_qpn = (*transport)->qp_num();
  self.source_port = 50001;
  ASSERT_TRUE((*transport)->Send(self, 1).ok());
  bool final = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!final && absl::Now() < deadline) {
    for (const ProbeMeasurement& m : (*transport)->Receive(absl::Milliseconds(100))) {
      final = final || m.final;
    }
  }
  EXPECT_TRUE(final) << "no ACK2 from " << device << "'s own UD QP within 5 s";
}

}  // namespace
}  // namespace weft::agent::probe
