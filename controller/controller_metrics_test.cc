#include "controller/controller_metrics.h"

#include "controller/metrics_test_util.h"
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

TEST(NodeStateLabelTest, LowercaseWithoutPrefix) {
  EXPECT_EQ(NodeStateLabel(weft::v1::NODE_STATE_HEALTHY), "healthy");
  EXPECT_EQ(NodeStateLabel(weft::v1::NODE_STATE_DRAINED), "drained");
  EXPECT_EQ(NodeStateLabel(weft::v1::NODE_STATE_UNSPECIFIED), "unspecified");
}

}  // namespace
}  // namespace weft::controller
