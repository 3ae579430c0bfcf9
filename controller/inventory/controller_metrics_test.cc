#include "controller/inventory/controller_metrics.h"

#include "common/testing/metrics.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

TEST(ControllerMetricsTest, SeriesExistFromTheStart) {
  prometheus::Registry registry;
  ControllerMetrics metrics(registry);
  for (const char* state : {"healthy", "degraded", "down", "drained"}) {
    EXPECT_EQ(MetricValue(registry, "weft_controller_nodes", {{"state", state}}), 0.0)
        << state;
    EXPECT_EQ(MetricValue(registry, "weft_controller_node_state_changes_total",
                          {{"to", state}}),
              0.0)
        << state;
  }
  EXPECT_EQ(MetricValue(registry, "weft_controller_agent_streams"), 0.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_registrations_total"), 0.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_telemetry_rejected_total",
                        {{"reason", "superseded"}}),
            0.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_desired_state_acks_total",
                        {{"result", "nack"}}),
            0.0);
}

TEST(ControllerMetricsTest, RecordsEvents) {
  prometheus::Registry registry;
  ControllerMetrics metrics(registry);
  metrics.SetNodeCount(weft::v1::NODE_STATE_DOWN, 3);
  metrics.SetNodeCount(weft::v1::NODE_STATE_UNSPECIFIED, 9);  // ignored
  metrics.StreamOpened();
  metrics.StreamOpened();
  metrics.StreamClosed();
  metrics.RegistrationAccepted();
  metrics.SessionFenced();
  metrics.TelemetryAccepted(8);
  metrics.TelemetryAccepted(4);
  metrics.TelemetryRejected("superseded");
  metrics.SamplesDropped("unknown_nic", 2);
  metrics.StreamRejected("no_hello");
  metrics.NodeStateChanged(weft::v1::NODE_STATE_DRAINED);
  metrics.NodeDrained();
  metrics.DesiredStateAckReceived(true);
  metrics.DesiredStateAckReceived(false);
  metrics.DesiredStateAckReceived(false);

  EXPECT_EQ(MetricValue(registry, "weft_controller_nodes", {{"state", "down"}}), 3.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_nodes", {{"state", "unspecified"}}),
            std::nullopt);
  EXPECT_EQ(MetricValue(registry, "weft_controller_agent_streams"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_registrations_total"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_sessions_fenced_total"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_telemetry_batches_total"), 2.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_telemetry_samples_total"), 12.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_telemetry_rejected_total",
                        {{"reason", "superseded"}}),
            1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_telemetry_samples_dropped_total",
                        {{"reason", "unknown_nic"}}),
            2.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_streams_rejected_total",
                        {{"reason", "no_hello"}}),
            1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_node_state_changes_total",
                        {{"to", "drained"}}),
            1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_drains_total"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_desired_state_acks_total",
                        {{"result", "ack"}}),
            1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_desired_state_acks_total",
                        {{"result", "nack"}}),
            2.0);
}

TEST(ControllerMetricsTest, HealthSeriesExistFromTheStartAndCount) {
  prometheus::Registry registry;
  ControllerMetrics metrics(registry);
  for (const char* rule : {"pfc_pause_storm", "ecn_mark_ratio", "cnp_ignored", "packet_seq_err",
                           "local_ack_timeout", "out_of_sequence", "link_down", "link_flap",
                           "nic_unreadable"}) {
    EXPECT_EQ(MetricValue(registry, "weft_controller_health_rule_firings_total",
                          {{"rule", rule}}),
              0.0)
        << rule;
    EXPECT_EQ(MetricValue(registry, "weft_controller_health_findings", {{"rule", rule}}), 0.0)
        << rule;
  }
  EXPECT_EQ(MetricValue(registry, "weft_controller_auto_drains_total"), 0.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_auto_undrains_total"), 0.0);

  metrics.HealthRuleFired("link_down");
  metrics.HealthRuleFired("link_down");
  metrics.SetActiveFindings("link_down", 1);
  metrics.NodeAutoDrained();
  metrics.NodeAutoUndrained();
  EXPECT_EQ(MetricValue(registry, "weft_controller_health_rule_firings_total",
                        {{"rule", "link_down"}}),
            2.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_health_findings", {{"rule", "link_down"}}),
            1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_auto_drains_total"), 1.0);
  EXPECT_EQ(MetricValue(registry, "weft_controller_auto_undrains_total"), 1.0);
}

TEST(ControllerMetricsTest, RackGaugesInBaseUnitsAndGoneWithTheRack) {
  prometheus::Registry registry;
  ControllerMetrics metrics(registry);
  weft::v1::ListRacksResponse racks;
  for (const char* name : {"r1", "r2"}) {
    weft::v1::RackStatus* rack = racks.add_racks();
    rack->set_pod("pod-1");
    rack->set_rack(name);
    rack->mutable_nodes()->set_healthy(3);
    rack->mutable_nodes()->set_degraded(1);
    rack->mutable_rates()->set_tx_gbps(800);
    rack->mutable_rates()->set_rx_gbps(400);
    rack->mutable_rates()->set_ecn_marked_per_s(12345);
    rack->mutable_rates()->set_cnp_sent_per_s(678);
    rack->mutable_rates()->set_cnp_handled_per_s(90);
    rack->mutable_rates()->set_pfc_pause_us_per_s(1'500'000);
    rack->mutable_rates()->set_pfc_rx_pause_share(0.75);
    rack->mutable_rates()->set_pfc_tx_pause_share(0.125);
    rack->mutable_rates()->set_retransmissions_per_s(7);
  }
  metrics.SetRackStatus(racks);
  const std::map<std::string, std::string> r1 = {{"pod", "pod-1"}, {"rack", "r1"}};
  EXPECT_EQ(MetricValue(registry, "weft_rack_tx_bytes_per_second", r1), 100e9);
  EXPECT_EQ(MetricValue(registry, "weft_rack_rx_bytes_per_second", r1), 50e9);
  EXPECT_EQ(MetricValue(registry, "weft_rack_ecn_marked_packets_per_second", r1), 12345.0);
  EXPECT_EQ(MetricValue(registry, "weft_rack_cnp_sent_per_second", r1), 678.0);
  EXPECT_EQ(MetricValue(registry, "weft_rack_cnp_handled_per_second", r1), 90.0);
  auto direction = [&r1](const char* d) {
    std::map<std::string, std::string> labels = r1;
    labels["direction"] = d;
    return labels;
  };
  EXPECT_EQ(MetricValue(registry, "weft_rack_pfc_pause_share", direction("rx")), 0.75);
  EXPECT_EQ(MetricValue(registry, "weft_rack_pfc_pause_share", direction("tx")), 0.125);
  EXPECT_EQ(MetricValue(registry, "weft_rack_retransmissions_per_second", r1), 7.0);
  EXPECT_EQ(MetricValue(registry, "weft_rack_nodes",
                        {{"pod", "pod-1"}, {"rack", "r1"}, {"state", "healthy"}}),
            3.0);
  EXPECT_EQ(MetricValue(registry, "weft_rack_nodes",
                        {{"pod", "pod-1"}, {"rack", "r1"}, {"state", "down"}}),
            0.0);

  racks.mutable_racks()->DeleteSubrange(0, 1);  // r1 is gone
  racks.mutable_racks(0)->mutable_nodes()->set_healthy(2);
  metrics.SetRackStatus(racks);
  EXPECT_FALSE(MetricValue(registry, "weft_rack_tx_bytes_per_second", r1).has_value());
  EXPECT_FALSE(MetricValue(registry, "weft_rack_pfc_pause_share", direction("rx")).has_value());
  EXPECT_FALSE(MetricValue(registry, "weft_rack_nodes",
                           {{"pod", "pod-1"}, {"rack", "r1"}, {"state", "healthy"}})
                   .has_value());
  EXPECT_EQ(MetricValue(registry, "weft_rack_nodes",
                        {{"pod", "pod-1"}, {"rack", "r2"}, {"state", "healthy"}}),
            2.0);
}

TEST(NodeStateLabelTest, LowercaseWithoutPrefix) {
  EXPECT_EQ(NodeStateLabel(weft::v1::NODE_STATE_HEALTHY), "healthy");
  EXPECT_EQ(NodeStateLabel(weft::v1::NODE_STATE_DRAINED), "drained");
  EXPECT_EQ(NodeStateLabel(weft::v1::NODE_STATE_UNSPECIFIED), "unspecified");
}

}  // namespace
}  // namespace weft::controller
