#include "agent/agent_metrics.h"

#include "common/testing/metrics.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

TEST(AgentMetricsTest, AgentSeriesExistFromTheStart) {
  prometheus::Registry registry;
  AgentMetrics metrics(registry, "n1");
  EXPECT_EQ(MetricValue(registry, "weft_agent_telemetry_batches_sent_total"), 0.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_telemetry_send_errors_total"), 0.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_reconnects_total"), 0.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_registered"), 0.0);

  metrics.BatchSent();
  metrics.BatchSent();
  metrics.SendError();
  metrics.Reconnect();
  metrics.SetRegistered(true);
  EXPECT_EQ(MetricValue(registry, "weft_agent_telemetry_batches_sent_total"), 2.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_telemetry_send_errors_total"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_reconnects_total"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_registered"), 1.0);
  metrics.SetRegistered(false);
  EXPECT_EQ(MetricValue(registry, "weft_agent_registered"), 0.0);
}

TEST(AgentMetricsTest, CollectionErrorsAreCountedPerDevice) {
  prometheus::Registry registry;
  AgentMetrics metrics(registry, "n1");
  metrics.AddNic("mlx5_0", 1);
  metrics.AddNic("mlx5_1", 1);
  EXPECT_EQ(MetricValue(registry, "weft_agent_collection_errors_total", {{"device", "mlx5_1"}}),
            0.0);
  metrics.CollectionError("mlx5_1");
  metrics.CollectionError("mlx5_1");
  EXPECT_EQ(MetricValue(registry, "weft_agent_collection_errors_total", {{"device", "mlx5_1"}}),
            2.0);
  EXPECT_EQ(MetricValue(registry, "weft_agent_collection_errors_total", {{"device", "mlx5_0"}}),
            0.0);
}

TEST(AgentMetricsTest, NicIncreasesAccumulateUnderNodeDevicePortLabels) {
  prometheus::Registry registry;
  AgentMetrics metrics(registry, "n1");
  metrics.AddNic("mlx5_0", 1);
  const std::map<std::string, std::string> labels = {
      {"node", "n1"}, {"device", "mlx5_0"}, {"port", "1"}};
  // No series before the NIC reports the counter: a counter it lacks is never a 0.
  EXPECT_EQ(MetricValue(registry, "weft_nic_port_xmit_bytes_total", labels), std::nullopt);

  RawNicCounters inc;
  inc.port_xmit_bytes = 4096;
  inc.port_rcv_bytes = 8192;
  inc.np_ecn_marked_roce_packets = 30;
  inc.np_cnp_sent = 10;
  inc.rp_cnp_handled = 9;
  inc.packet_seq_err = 3;
  inc.local_ack_timeout_err = 2;
  inc.out_of_sequence = 0;
  inc.pfc.push_back({3, 5, 6, 700, 800});
  metrics.AddNicIncrease("mlx5_0", 1, inc);
  metrics.AddNicIncrease("mlx5_0", 1, inc);

  EXPECT_EQ(MetricValue(registry, "weft_nic_port_xmit_bytes_total", labels), 8192.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_port_rcv_bytes_total", labels), 16384.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_np_ecn_marked_roce_packets_total", labels), 60.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_np_cnp_sent_total", labels), 20.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_rp_cnp_handled_total", labels), 18.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_rp_cnp_ignored_total", labels), std::nullopt);
  EXPECT_EQ(MetricValue(registry, "weft_nic_packet_seq_err_total", labels), 6.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_local_ack_timeout_err_total", labels), 4.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_out_of_sequence_total", labels), 0.0);

  auto pfc = [&](const char* direction) {
    std::map<std::string, std::string> l = labels;
    l["direction"] = direction;
    l["priority"] = "3";
    return l;
  };
  EXPECT_EQ(MetricValue(registry, "weft_nic_pfc_pause_frames_total", pfc("rx")), 10.0);
  EXPECT_EQ(MetricValue(registry, "weft_nic_pfc_pause_frames_total", pfc("tx")), 12.0);
  // ethtool counts µs; Prometheus wants seconds.
  EXPECT_DOUBLE_EQ(
      *MetricValue(registry, "weft_nic_pfc_pause_duration_seconds_total", pfc("rx")), 1400e-6);
  EXPECT_DOUBLE_EQ(
      *MetricValue(registry, "weft_nic_pfc_pause_duration_seconds_total", pfc("tx")), 1600e-6);
  // No series for priorities without PFC.
  std::map<std::string, std::string> p0 = pfc("rx");
  p0["priority"] = "0";
  EXPECT_EQ(MetricValue(registry, "weft_nic_pfc_pause_frames_total", p0), std::nullopt);
}

TEST(AgentMetricsTest, NicSeriesCarryNetdevAndPciOfTheDiscoveredNic) {
  prometheus::Registry registry;
  AgentMetrics metrics(registry, "gpu-1");
  weft::v1::Nic nic;
  nic.set_device("mlx5_4");
  nic.set_port(1);
  nic.set_netdev("ens5f0np0");
  nic.set_pci_address("0000:59:00.0");
  metrics.AddNic(nic);
  RawNicCounters increase;
  increase.port_xmit_bytes = 4096;
  metrics.AddNicIncrease("mlx5_4", 1, increase);
  const std::map<std::string, std::string> labels = {{"node", "gpu-1"},
                                                     {"device", "mlx5_4"},
                                                     {"port", "1"},
                                                     {"netdev", "ens5f0np0"},
                                                     {"pci", "0000:59:00.0"}};
  EXPECT_EQ(MetricValue(registry, "weft_nic_port_xmit_bytes_total", labels), 4096.0);
}

TEST(AgentMetricsTest, CollectionDurationIsObserved) {
  prometheus::Registry registry;
  AgentMetrics metrics(registry, "gpu-1");
  metrics.ObserveCollection(absl::Microseconds(800));
  metrics.ObserveCollection(absl::Milliseconds(3));
  bool found = false;
  for (const auto& family : registry.Collect()) {
    if (family.name != "weft_agent_collection_duration_seconds") continue;
    found = true;
    ASSERT_EQ(family.metric.size(), 1u);
    EXPECT_EQ(family.metric[0].histogram.sample_count, 2u);
    EXPECT_NEAR(family.metric[0].histogram.sample_sum, 0.0038, 1e-9);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace weft::agent
