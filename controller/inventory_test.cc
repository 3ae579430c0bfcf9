#include "controller/inventory.h"

#include <memory>
#include <string>

#include "common/fake_clock.h"
#include "controller/controller_metrics.h"
#include "controller/metrics_test_util.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

using weft::v1::NodeState;

weft::v1::NodeInfo MakeNode(const std::string& name, int nics = 2,
                            const std::string& rack = "r1") {
  weft::v1::NodeInfo info;
  info.set_name(name);
  info.set_rack(rack);
  info.set_pod("p1");
  for (int i = 0; i < nics; ++i) {
    weft::v1::Nic* nic = info.add_nics();
    nic->set_device("mlx5_" + std::to_string(i));
    nic->set_port(1);
    nic->set_netdev("ens" + std::to_string(i) + "np0");
  }
  weft::v1::Gpu* gpu = info.add_gpus();
  gpu->set_index(0);
  gpu->set_closest_nic("mlx5_0");
  return info;
}

weft::v1::NicSample Sample(const std::string& device, double tx_bytes_per_s,
                           double retrans_per_s = 0) {
  weft::v1::NicSample sample;
  sample.set_device(device);
  sample.set_port(1);
  sample.set_rates_valid(true);
  sample.mutable_port_counters()->mutable_xmit_bytes()->set_per_second(tx_bytes_per_s);
  sample.mutable_retransmission()->mutable_packet_seq_err()->set_per_second(retrans_per_s);
  return sample;
}

weft::v1::TelemetryBatch Batch(std::initializer_list<weft::v1::NicSample> samples) {
  weft::v1::TelemetryBatch batch;
  for (const auto& s : samples) *batch.add_samples() = s;
  return batch;
}

class InventoryTest : public ::testing::Test {
 protected:
  InventoryTest() : metrics_(registry_) { Reset(InventoryOptions{}); }

  void Reset(InventoryOptions options) {
    inventory_ = std::make_unique<Inventory>(&clock_, options, &metrics_);
  }

  NodeState StateOf(const std::string& name) {
    auto status = inventory_->GetNode(name);
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? status->state() : weft::v1::NODE_STATE_UNSPECIFIED;
  }

  double Metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    return MetricValue(registry_, name, labels).value_or(-1);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_;
  std::unique_ptr<Inventory> inventory_;
};

TEST_F(InventoryTest, RegisterGrantsEpochAboveBothCurrentAndLast) {
  auto first = inventory_->Register(MakeNode("n1"), 0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->session_epoch, 1u);
  EXPECT_EQ(first->fenced_epoch, 0u);

  // An agent that remembers a higher epoch (e.g. the controller restarted) gets above it.
  auto second = inventory_->Register(MakeNode("n2"), 41);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->session_epoch, 42u);

  // A lower last_session_epoch cannot push the node's epoch backwards.
  auto third = inventory_->Register(MakeNode("n2"), 3);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->session_epoch, 43u);
  EXPECT_EQ(third->fenced_epoch, 42u);

  EXPECT_EQ(inventory_->ListNodes().size(), 2u);
  EXPECT_EQ(Metric("weft_controller_registrations_total"), 3);
  EXPECT_EQ(Metric("weft_controller_sessions_fenced_total"), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 2);
}

TEST_F(InventoryTest, ReRegisterReplacesInfoWithoutDuplicatingTheNode) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 2, "r1"), 0).ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 3, "r7"), 1).ok());
  auto nodes = inventory_->ListNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].info().rack(), "r7");
  EXPECT_EQ(nodes[0].nics_size(), 3);
  EXPECT_EQ(nodes[0].session_epoch(), 2u);
  EXPECT_EQ(nodes[0].info().gpus_size(), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 1);
}

TEST_F(InventoryTest, RegisterRejectsMalformedNodes) {
  auto empty_name = inventory_->Register(MakeNode(""), 0);
  EXPECT_EQ(empty_name.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty_name.status().message().find("node name is empty"), std::string::npos);

  auto no_nics = inventory_->Register(MakeNode("n1", 0), 0);
  EXPECT_EQ(no_nics.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_nics.status().message().find("node n1 reports no RDMA NICs"),
            std::string::npos);

  weft::v1::NodeInfo duplicate = MakeNode("n1", 1);
  *duplicate.add_nics() = duplicate.nics(0);
  auto dup = inventory_->Register(duplicate, 0);
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find("NIC mlx5_0 port 1 twice"), std::string::npos);

  weft::v1::NodeInfo unnamed_nic = MakeNode("n1", 1);
  unnamed_nic.mutable_nics(0)->clear_device();
  EXPECT_EQ(inventory_->Register(unnamed_nic, 0).status().code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(inventory_->Register(MakeNode("n1"), UINT64_MAX).status().code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE(inventory_->ListNodes().empty());
  EXPECT_EQ(Metric("weft_controller_registrations_total"), 0);
}

TEST_F(InventoryTest, CheckSessionNamesTheProblem) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 0).ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 0).ok());  // epoch 2
  EXPECT_TRUE(inventory_->CheckSession("n1", 2).ok());

  absl::Status stale = inventory_->CheckSession("n1", 1);
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(stale.message(), "session 1 of node n1 was superseded by session 2");
  EXPECT_EQ(SessionRejectReason(stale), "superseded");

  absl::Status unknown = inventory_->CheckSession("ghost", 1);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unknown.message().find("node ghost is not registered"), std::string::npos);
  EXPECT_NE(unknown.message().find("call Register"), std::string::npos);
  EXPECT_EQ(SessionRejectReason(unknown), "unknown_node");

  absl::Status ungranted = inventory_->CheckSession("n1", 9);
  EXPECT_EQ(ungranted.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ungranted.message().find("session 9 of node n1 was never granted"),
            std::string::npos);
  EXPECT_EQ(SessionRejectReason(ungranted), "ungranted_session");
}

TEST_F(InventoryTest, TelemetryOfAStaleSessionIsRejectedAndCounted) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 0).ok());
  ASSERT_TRUE(inventory_->AcceptTelemetry("n1", 1, Batch({Sample("mlx5_0", 1e9)})).ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 1).ok());  // epoch 2 fences 1

  absl::Status stale = inventory_->AcceptTelemetry("n1", 1, Batch({Sample("mlx5_0", 9e9)}));
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(stale.message(), "session 1 of node n1 was superseded by session 2");

  absl::Status unknown = inventory_->AcceptTelemetry("n9", 1, Batch({}));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kFailedPrecondition);

  // The stale batch did not land: the rate is still the one session 1 reported.
  auto node = inventory_->GetNode("n1");
  ASSERT_TRUE(node.ok());
  EXPECT_DOUBLE_EQ(node->rates().tx_gbps(), 8.0);
  EXPECT_EQ(Metric("weft_controller_telemetry_batches_total"), 1);
  EXPECT_EQ(Metric("weft_controller_telemetry_rejected_total", {{"reason", "superseded"}}), 1);
  EXPECT_EQ(Metric("weft_controller_telemetry_rejected_total", {{"reason", "unknown_node"}}),
            1);
}

TEST_F(InventoryTest, LivenessFlipsAtTheExactThreshold) {
  InventoryOptions options;
  options.telemetry_interval = absl::Seconds(1);
  options.down_after_intervals = 3;
  Reset(options);
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 0).ok());
  EXPECT_EQ(inventory_->down_after(), absl::Seconds(3));

  clock_.Advance(absl::Seconds(2));
  ASSERT_TRUE(inventory_->AcceptTelemetry("n1", 1, Batch({Sample("mlx5_0", 1e9)})).ok());

  // Exactly three intervals of silence: the third sample is due, not yet missed.
  clock_.Advance(absl::Seconds(3));
  EXPECT_TRUE(inventory_->EvaluateLiveness().empty());
  EXPECT_EQ(StateOf("n1"), weft::v1::NODE_STATE_HEALTHY);

  clock_.Advance(absl::Nanoseconds(1));
  auto changes = inventory_->EvaluateLiveness();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].node, "n1");
  EXPECT_EQ(changes[0].from, weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(changes[0].to, weft::v1::NODE_STATE_DOWN);
  EXPECT_EQ(changes[0].reason, "no telemetry for 3s");
  auto down = inventory_->GetNode("n1");
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->state(), weft::v1::NODE_STATE_DOWN);
  EXPECT_FALSE(down->reporting());
  EXPECT_EQ(down->rates().tx_gbps(), 0);  // a DOWN node reports no rates

  // Logged and counted once, however many sweeps follow.
  clock_.Advance(absl::Seconds(10));
  EXPECT_TRUE(inventory_->EvaluateLiveness().empty());
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "down"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "down"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 0);

  ASSERT_TRUE(inventory_->AcceptTelemetry("n1", 1, Batch({Sample("mlx5_0", 2e9)})).ok());
  auto back = inventory_->GetNode("n1");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_TRUE(back->reporting());
  EXPECT_DOUBLE_EQ(back->rates().tx_gbps(), 16.0);
  EXPECT_EQ(back->last_seen_us(), absl::ToUnixMicros(clock_.Now()));
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "healthy"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "down"}}), 0);
}

TEST_F(InventoryTest, RegisterCountsAsHeardFrom) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 0).ok());
  clock_.Advance(absl::Seconds(3) + absl::Milliseconds(1));
  ASSERT_EQ(inventory_->EvaluateLiveness().size(), 1u);
  EXPECT_EQ(StateOf("n1"), weft::v1::NODE_STATE_DOWN);
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 1).ok());
  EXPECT_EQ(StateOf("n1"), weft::v1::NODE_STATE_HEALTHY);
}

TEST_F(InventoryTest, DrainRules) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 0).ok());

  auto unknown = inventory_->Drain("ghost", "x");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("ghost"), std::string::npos);
  EXPECT_EQ(inventory_->Undrain("ghost").status().code(), absl::StatusCode::kNotFound);

  auto not_drained = inventory_->Undrain("n1");
  EXPECT_EQ(not_drained.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(not_drained.status().message().find("n1 is not drained"), std::string::npos);

  auto drained = inventory_->Drain("n1", "");
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_EQ(drained->state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(drained->drain_reason(), "no reason given");
  EXPECT_TRUE(drained->reporting());

  // Draining again only replaces the reason.
  auto again = inventory_->Drain("n1", "replace optics");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->drain_reason(), "replace optics");
  EXPECT_EQ(Metric("weft_controller_drains_total"), 1);
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "drained"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "drained"}}), 1);

  // A drained node stays DRAINED while it goes silent; `reporting` tells.
  clock_.Advance(absl::Seconds(4));
  EXPECT_TRUE(inventory_->EvaluateLiveness().empty());
  auto silent = inventory_->GetNode("n1");
  ASSERT_TRUE(silent.ok());
  EXPECT_EQ(silent->state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_FALSE(silent->reporting());

  // Re-registering does not undo an operator's drain.
  ASSERT_TRUE(inventory_->Register(MakeNode("n1"), 1).ok());
  EXPECT_EQ(StateOf("n1"), weft::v1::NODE_STATE_DRAINED);

  clock_.Advance(absl::Seconds(4));
  inventory_->EvaluateLiveness();
  auto undrained = inventory_->Undrain("n1");
  ASSERT_TRUE(undrained.ok());
  EXPECT_EQ(undrained->state(), weft::v1::NODE_STATE_DOWN);  // by its liveness
  EXPECT_EQ(undrained->drain_reason(), "");

  ASSERT_TRUE(inventory_->AcceptTelemetry("n1", 2, Batch({Sample("mlx5_0", 1e9)})).ok());
  EXPECT_EQ(StateOf("n1"), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "drained"}}), 0);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 1);
}

TEST_F(InventoryTest, RatesSumLatestSamplesSkippingErrors) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 3), 0).ok());
  weft::v1::NicSample errored = Sample("mlx5_2", 50e9, 1000);
  errored.set_error("port counters unreadable");
  ASSERT_TRUE(inventory_
                  ->AcceptTelemetry("n1", 1,
                                    Batch({Sample("mlx5_0", 1e9, 1), Sample("mlx5_1", 2e9, 2),
                                           errored}))
                  .ok());
  auto node = inventory_->GetNode("n1");
  ASSERT_TRUE(node.ok());
  EXPECT_DOUBLE_EQ(node->rates().tx_gbps(), 24.0);
  EXPECT_DOUBLE_EQ(node->rates().retransmissions_per_s(), 3.0);
  ASSERT_EQ(node->nics_size(), 3);
  EXPECT_EQ(node->nics(2).latest().error(), "port counters unreadable");

  // The errored sample is kept in the window, flagged.
  auto window = inventory_->NicWindow("n1", "mlx5_2", 1);
  ASSERT_TRUE(window.ok());
  ASSERT_EQ(window->size(), 1u);
  EXPECT_TRUE((*window)[0].has_error);
  EXPECT_EQ((*window)[0].rates.tx_gbps, 0);

  // Only the latest sample of each NIC counts: a newer error zeroes that NIC.
  weft::v1::NicSample later_error = Sample("mlx5_0", 0);
  later_error.set_error("EIO");
  ASSERT_TRUE(inventory_->AcceptTelemetry("n1", 1, Batch({later_error})).ok());
  node = inventory_->GetNode("n1");
  ASSERT_TRUE(node.ok());
  EXPECT_DOUBLE_EQ(node->rates().tx_gbps(), 16.0);
  EXPECT_EQ(Metric("weft_controller_telemetry_samples_total"), 4);
}

TEST_F(InventoryTest, WindowIsBounded) {
  InventoryOptions options;
  options.window_samples = 3;
  Reset(options);
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 1), 0).ok());
  for (int i = 1; i <= 5; ++i) {
    weft::v1::NicSample sample = Sample("mlx5_0", i * 1e9);
    sample.set_timestamp_us(i);
    ASSERT_TRUE(inventory_->AcceptTelemetry("n1", 1, Batch({sample})).ok());
  }
  auto window = inventory_->NicWindow("n1", "mlx5_0", 1);
  ASSERT_TRUE(window.ok());
  ASSERT_EQ(window->size(), 3u);
  EXPECT_EQ((*window)[0].timestamp_us, 3);
  EXPECT_EQ((*window)[2].timestamp_us, 5);
  EXPECT_DOUBLE_EQ((*window)[2].rates.tx_gbps, 40.0);
  EXPECT_EQ(inventory_->NicWindow("n1", "mlx5_9", 1).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(InventoryTest, SamplesOfUnregisteredNicsAreDroppedAndCounted) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 1), 0).ok());
  ASSERT_TRUE(inventory_
                  ->AcceptTelemetry("n1", 1,
                                    Batch({Sample("mlx5_0", 1e9), Sample("mlx5_7", 9e9)}))
                  .ok());
  auto node = inventory_->GetNode("n1");
  ASSERT_TRUE(node.ok());
  EXPECT_DOUBLE_EQ(node->rates().tx_gbps(), 8.0);
  EXPECT_EQ(Metric("weft_controller_telemetry_samples_total"), 1);
  EXPECT_EQ(Metric("weft_controller_telemetry_samples_dropped_total",
                   {{"reason", "unknown_nic"}}),
            1);
}

TEST_F(InventoryTest, ReRegisterKeepsWindowsOfRemainingNics) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 2), 0).ok());
  ASSERT_TRUE(inventory_
                  ->AcceptTelemetry("n1", 1,
                                    Batch({Sample("mlx5_0", 1e9), Sample("mlx5_1", 1e9)}))
                  .ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 1), 1).ok());  // mlx5_1 is gone
  auto window = inventory_->NicWindow("n1", "mlx5_0", 1);
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(window->size(), 1u);
  EXPECT_EQ(inventory_->NicWindow("n1", "mlx5_1", 1).status().code(),
            absl::StatusCode::kNotFound);
  auto node = inventory_->GetNode("n1");
  ASSERT_TRUE(node.ok());
  EXPECT_DOUBLE_EQ(node->rates().tx_gbps(), 8.0);
}

TEST_F(InventoryTest, ListNodesSortsAndFiltersByRack) {
  ASSERT_TRUE(inventory_->Register(MakeNode("b", 1, "r2"), 0).ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("c", 1, "r1"), 0).ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("a", 1, "r1"), 0).ok());
  auto all = inventory_->ListNodes();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].info().name(), "a");
  EXPECT_EQ(all[1].info().name(), "b");
  EXPECT_EQ(all[2].info().name(), "c");
  auto r1 = inventory_->ListNodes("r1");
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(r1[0].info().name(), "a");
  EXPECT_EQ(r1[1].info().name(), "c");
  EXPECT_TRUE(inventory_->ListNodes("r9").empty());
  EXPECT_EQ(inventory_->GetNode("zzz").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::controller
