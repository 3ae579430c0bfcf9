#include "controller/inventory/inventory.h"

#include <memory>
#include <string>
#include <vector>

#include "common/daemon_config.h"
#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "common/testing/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "store/controller_store.h"

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

// The inventory keeps a running tally of link flaps per NIC instead of rereading the
// window on every sample; the rule must fire and clear exactly as the window says.
TEST_F(InventoryTest, LinkFlapFiresWhileTheFlapIsInTheWindowAndClearsAfter) {
  InventoryOptions options;
  options.window_samples = 4;
  Reset(options);
  ASSERT_TRUE(inventory_->Register(MakeNode("n1", 1), 0).ok());
  auto send = [&](uint64_t link_downed, bool rates_valid = true) {
    weft::v1::NicSample sample = Sample("mlx5_0", 1e9);
    sample.set_rates_valid(rates_valid);
    sample.mutable_port_counters()->mutable_link_downed()->set_total(link_downed);
    clock_.Advance(absl::Seconds(1));
    EXPECT_TRUE(inventory_->AcceptTelemetry("n1", 1, Batch({sample})).ok());
    return inventory_->GetNode("n1")->findings_size();
  };
  EXPECT_EQ(send(0), 0);
  EXPECT_EQ(send(0), 0);
  const absl::Time flap_seen = clock_.Now() + absl::Seconds(1);
  EXPECT_EQ(send(2), 1);  // 0 -> 2: two flaps
  auto node = inventory_->GetNode("n1");
  ASSERT_EQ(node->findings_size(), 1);
  EXPECT_EQ(node->findings(0).rule(), "link_flap");
  EXPECT_EQ(node->findings(0).value(), 2);
  EXPECT_EQ(node->findings(0).since_us(), absl::ToUnixMicros(flap_seen));
  // A reset does not count, and the pair 0 -> 2 stays in the 4-sample window for two
  // more samples, until the 0 before it leaves.
  EXPECT_EQ(send(1, /*rates_valid=*/false), 1);
  EXPECT_EQ(send(1), 1);
  EXPECT_EQ(send(1), 0);
  EXPECT_EQ(send(1), 0);
  // Later flaps count again from zero.
  EXPECT_EQ(send(3), 1);
  EXPECT_EQ(inventory_->GetNode("n1")->findings(0).value(), 2);
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

TEST_F(InventoryTest, ListNodeIdentitiesHasWhatNodesAreButNoSamples) {
  ASSERT_TRUE(inventory_->Register(MakeNode("b", 2, "r2"), 0).ok());
  ASSERT_TRUE(inventory_->Register(MakeNode("a", 2, "r1"), 0).ok());
  weft::v1::TelemetryBatch batch;
  batch.add_samples()->set_device("mlx5_0");
  ASSERT_TRUE(inventory_->AcceptTelemetry("a", 1, batch).ok());
  ASSERT_EQ(inventory_->GetNode("a")->nics_size(), 2);
  const std::vector<weft::v1::NodeStatus> identities = inventory_->ListNodeIdentities();
  ASSERT_EQ(identities.size(), 2u);
  EXPECT_EQ(identities[0].info().name(), "a");
  EXPECT_EQ(identities[0].info().rack(), "r1");
  EXPECT_EQ(identities[0].info().nics_size(), 2);
  EXPECT_TRUE(identities[0].reporting());
  EXPECT_EQ(identities[0].state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(identities[0].nics_size(), 0) << "no NIC samples";
  EXPECT_FALSE(identities[0].has_rates());
  EXPECT_EQ(identities[1].info().name(), "b");
}

TEST(InventoryOptionsTest, FromConfigTakesTheHealthSectionAndDefaultsMatch) {
  weft::v1::ControllerConfig config = DefaultControllerConfig();
  config.mutable_health()->set_degrade_after_ms(500);
  config.mutable_health()->set_pfc_pause_share(0.25);
  config.mutable_health()->mutable_auto_drain()->set_enabled(true);
  config.set_event_log_capacity(123);
  const InventoryOptions options = InventoryOptions::FromConfig(config);
  EXPECT_EQ(options.health_timings.degrade_after, absl::Milliseconds(500));
  EXPECT_EQ(options.health.pfc_pause_share, 0.25);
  EXPECT_TRUE(options.auto_drain.enabled);
  EXPECT_EQ(options.event_log_capacity, 123u);

  // A config without the section (a hand-built one) gets the same defaults as
  // DefaultControllerConfig().
  weft::v1::ControllerConfig bare;
  bare.set_telemetry_interval_ms(1000);
  bare.set_down_after_intervals(3);
  bare.set_window_samples(60);
  const InventoryOptions from_bare = InventoryOptions::FromConfig(bare);
  const InventoryOptions from_default = InventoryOptions::FromConfig(DefaultControllerConfig());
  EXPECT_EQ(from_bare.health.consecutive_samples, from_default.health.consecutive_samples);
  EXPECT_EQ(from_bare.health_timings.recover_after, from_default.health_timings.recover_after);
  EXPECT_EQ(from_bare.auto_drain.after, from_default.auto_drain.after);
  EXPECT_EQ(from_bare.event_log_capacity, from_default.event_log_capacity);
}

// ---------------------------------------------------------------------------
// Health: rules, hysteresis, auto-drain, events and rack gauges through the
// inventory, driven like the controller drives it: telemetry once per second, a sweep
// every 250 ms, all on a FakeClock.

// A valid sample with the port up and PFC on priority 3 paused `pause_share` of the
// time (rx direction).
weft::v1::NicSample PfcSample(const std::string& device, double pause_share) {
  weft::v1::NicSample sample = Sample(device, 25e9);
  sample.set_port_state(weft::v1::PORT_STATE_ACTIVE);
  auto* pfc = sample.add_pfc();
  pfc->set_priority(3);
  pfc->mutable_rx_pause_duration_us()->set_per_second(pause_share * 1e6);
  return sample;
}

class InventoryHealthTest : public InventoryTest {
 protected:
  void SetUp() override { Configure(InventoryOptions()); }

  void Configure(InventoryOptions options) {
    Reset(options);
    ASSERT_TRUE(inventory_->Register(MakeNode("n1", 2, "r1"), 0).ok());
    epoch_ = 1;
  }

  // Runs `seconds` seconds: sweeps every 250 ms, and at the end of each second (unless
  // `silent`) n1 reports mlx5_0 paused `share_0` of the time and mlx5_1 quiet.
  void Run(int seconds, double share_0, bool silent = false) {
    for (int s = 0; s < seconds; ++s) {
      for (int tick = 1; tick <= 4; ++tick) {
        clock_.Advance(absl::Milliseconds(250));
        if (tick == 4 && !silent) {
          ASSERT_TRUE(inventory_
                          ->AcceptTelemetry("n1", epoch_,
                                            Batch({PfcSample("mlx5_0", share_0),
                                                   PfcSample("mlx5_1", 0.01)}))
                          .ok());
        }
        for (StateChange& change : inventory_->Sweep()) {
          changes_.push_back({clock_.Now(), std::move(change)});
        }
      }
    }
  }

  weft::v1::NodeStatus Node(const std::string& name = "n1") {
    auto status = inventory_->GetNode(name);
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? *status : weft::v1::NodeStatus();
  }

  // The first recorded change of n1 into `state`; InfiniteFuture when none.
  absl::Time FirstChangeTo(weft::v1::NodeState state) {
    for (const auto& [at, change] : changes_) {
      if (change.to == state) return at;
    }
    return absl::InfiniteFuture();
  }

  std::vector<weft::v1::Event> Events(weft::v1::EventKind kind) {
    std::vector<weft::v1::Event> out;
    const weft::v1::ListEventsResponse all =
        inventory_->ListEvents(weft::v1::ListEventsRequest());
    for (const auto& event : all.events()) {
      if (event.kind() == kind) out.push_back(event);
    }
    return out;
  }

  uint64_t epoch_ = 0;
  std::vector<std::pair<absl::Time, StateChange>> changes_;
};

TEST_F(InventoryHealthTest, PfcStormDegradesWithinFiveSecondsAndRecoversOnlyAfterTenClean) {
  Run(5, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_TRUE(changes_.empty());

  // Worst case for detection: the storm starts 0.3 s before a reading, so that
  // reading's interval is paused only 29% of the time (below 50%).
  const absl::Time storm_start = clock_.Now() + absl::Milliseconds(700);
  Run(1, 0.29);
  Run(1, 0.97);  // the run of stormy samples starts here
  const absl::Time run_start = clock_.Now();
  Run(1, 0.97);  // second in a row: the rule fires
  weft::v1::NodeStatus firing = Node();
  EXPECT_EQ(firing.state(), weft::v1::NODE_STATE_HEALTHY) << "not before degrade_after";
  ASSERT_EQ(firing.findings_size(), 1);
  const weft::v1::Finding& finding = firing.findings(0);
  EXPECT_EQ(finding.rule(), "pfc_pause_storm");
  EXPECT_EQ(finding.device(), "mlx5_0");
  EXPECT_DOUBLE_EQ(finding.value(), 0.97);
  EXPECT_DOUBLE_EQ(finding.threshold(), 0.5);
  EXPECT_EQ(finding.since_us(), absl::ToUnixMicros(run_start));
  EXPECT_EQ(Metric("weft_controller_health_rule_firings_total", {{"rule", "pfc_pause_storm"}}),
            1);
  EXPECT_EQ(Metric("weft_controller_health_findings", {{"rule", "pfc_pause_storm"}}), 1);

  Run(3, 0.97);
  const absl::Time degraded_at = FirstChangeTo(weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(degraded_at, run_start + absl::Seconds(2));
  EXPECT_LE(degraded_at - storm_start, absl::Seconds(5));
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].second.from, weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(changes_[0].second.reason,
            "pfc_pause_storm on mlx5_0/1: rx pause 97.0% of the time on priority 3 "
            "(threshold 50.0%)");
  weft::v1::NodeStatus degraded = Node();
  EXPECT_EQ(degraded.state(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(degraded.health(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "degraded"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 0);
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "degraded"}}), 1);

  // The storm ends: the rule clears at once, the node recovers 10 s later.
  Run(1, 0.01);
  const absl::Time clean_since = clock_.Now();
  EXPECT_EQ(Node().findings_size(), 0);
  EXPECT_EQ(Metric("weft_controller_health_findings", {{"rule", "pfc_pause_storm"}}), 0);
  Run(9, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED) << "9 s clean is not enough";
  Run(1, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(FirstChangeTo(weft::v1::NODE_STATE_HEALTHY), clean_since + absl::Seconds(10));
  EXPECT_EQ(changes_.back().second.reason, "no health rule fired for 10s");
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 1);

  // The events tell the story with the numbers.
  const auto fired = Events(weft::v1::EVENT_KIND_RULE_FIRED);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].node(), "n1");
  EXPECT_EQ(fired[0].finding().rule(), "pfc_pause_storm");
  EXPECT_DOUBLE_EQ(fired[0].finding().value(), 0.97);
  EXPECT_DOUBLE_EQ(fired[0].finding().threshold(), 0.5);
  const auto cleared = Events(weft::v1::EVENT_KIND_RULE_CLEARED);
  ASSERT_EQ(cleared.size(), 1u);
  EXPECT_EQ(cleared[0].time_us(), absl::ToUnixMicros(clean_since));
  EXPECT_NE(cleared[0].message().find("pfc_pause_storm on mlx5_0/1 cleared after 5s"),
            std::string::npos)
      << cleared[0].message();
  const auto states = Events(weft::v1::EVENT_KIND_STATE_CHANGED);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].to_state(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(states[0].time_us(), absl::ToUnixMicros(degraded_at));
  EXPECT_EQ(states[1].from_state(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(states[1].to_state(), weft::v1::NODE_STATE_HEALTHY);
}

TEST_F(InventoryHealthTest, ShortBurstsAndInvalidRatesDoNotDegrade) {
  // Storm, quiet, storm, ...: never two stormy samples in a row.
  for (int i = 0; i < 10; ++i) {
    Run(1, 0.97);
    Run(1, 0.01);
  }
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(Metric("weft_controller_health_rule_firings_total", {{"rule", "pfc_pause_storm"}}),
            0);

  // Pause values on samples whose rates are not valid (a counter reset) count for
  // nothing; neither do samples without the PFC counters.
  for (int i = 0; i < 10; ++i) {
    weft::v1::NicSample reset = PfcSample("mlx5_0", 0.97);
    reset.set_rates_valid(false);
    weft::v1::NicSample no_pfc = PfcSample("mlx5_1", 0);
    no_pfc.clear_pfc();
    clock_.Advance(absl::Seconds(1));
    ASSERT_TRUE(inventory_->AcceptTelemetry("n1", epoch_, Batch({reset, no_pfc})).ok());
    inventory_->Sweep();
  }
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(Node().findings_size(), 0);
}

TEST_F(InventoryHealthTest, DownOutranksDegradedAndFindingsAreHiddenWhileSilent) {
  Run(6, 0.97);
  ASSERT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  Run(4, 0, /*silent=*/true);
  weft::v1::NodeStatus down = Node();
  EXPECT_EQ(down.state(), weft::v1::NODE_STATE_DOWN);
  EXPECT_EQ(down.findings_size(), 0);
  EXPECT_EQ(Metric("weft_controller_health_findings", {{"rule", "pfc_pause_storm"}}), 0);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "down"}}), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "degraded"}}), 0);

  // Back and clean: DEGRADED (its health is still judged so) until 10 s of clean
  // reports since its return; the silent time does not count as clean.
  Run(1, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  Run(9, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  Run(1, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
}

InventoryOptions AutoDrainOptions() {
  InventoryOptions options;
  options.auto_drain.enabled = true;
  options.auto_drain.after = absl::Seconds(5);
  options.auto_drain.undrain_after_clean = absl::Seconds(20);
  return options;
}

TEST_F(InventoryHealthTest, AutoDrainsASickNodeAndUndrainsItAfterACleanWindow) {
  Configure(AutoDrainOptions());
  Run(3, 0.97);  // fires at 2 s, DEGRADED at 3 s
  ASSERT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  const absl::Time degraded_at = FirstChangeTo(weft::v1::NODE_STATE_DEGRADED);
  Run(4, 0.97);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  Run(1, 0.97);
  weft::v1::NodeStatus drained = Node();
  ASSERT_EQ(drained.state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(FirstChangeTo(weft::v1::NODE_STATE_DRAINED), degraded_at + absl::Seconds(5));
  EXPECT_EQ(drained.drained_by(), weft::v1::DRAIN_SOURCE_AUTO);
  EXPECT_EQ(drained.drain_reason(),
            "auto: pfc_pause_storm on mlx5_0/1: rx pause 97.0% of the time on priority 3 "
            "(threshold 50.0%) (DEGRADED for 5s)");
  EXPECT_EQ(Metric("weft_controller_auto_drains_total"), 1);
  EXPECT_EQ(Metric("weft_controller_drains_total"), 0) << "that counter is the operators'";
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "drained"}}), 1);

  // Recovery: HEALTHY 10 s after the first clean sample (still drained), undrained
  // 20 s after that.
  Run(10, 0.01);
  EXPECT_EQ(Node().health(), weft::v1::NODE_STATE_DEGRADED);
  Run(1, 0.01);
  EXPECT_EQ(Node().health(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DRAINED);
  Run(19, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DRAINED);
  Run(1, 0.01);
  weft::v1::NodeStatus undrained = Node();
  EXPECT_EQ(undrained.state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(undrained.drained_by(), weft::v1::DRAIN_SOURCE_UNSPECIFIED);
  EXPECT_EQ(undrained.drain_reason(), "");
  EXPECT_EQ(Metric("weft_controller_auto_undrains_total"), 1);

  const auto drains = Events(weft::v1::EVENT_KIND_DRAINED);
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0].drained_by(), weft::v1::DRAIN_SOURCE_AUTO);
  EXPECT_EQ(drains[0].from_state(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(drains[0].message(), drained.drain_reason());
  const auto undrains = Events(weft::v1::EVENT_KIND_UNDRAINED);
  ASSERT_EQ(undrains.size(), 1u);
  EXPECT_EQ(undrains[0].drained_by(), weft::v1::DRAIN_SOURCE_AUTO);
  EXPECT_EQ(undrains[0].message(), "auto: HEALTHY for 20s, undrained");
  EXPECT_EQ(undrains[0].to_state(), weft::v1::NODE_STATE_HEALTHY);
}

Finding PingmeshNicFinding(absl::Time since) {
  Finding finding;
  finding.rule = HealthRule::kPingmeshNic;
  finding.device = "n1/mlx5_1";
  finding.value = 1.0;
  finding.detail = "every probe of n1/mlx5_1 lost while its ToR's peers answer";
  finding.since = since;
  return finding;
}

TEST_F(InventoryHealthTest, ExternalFindingsDegradeAndAutoDrainLikeNicFindings) {
  Configure(AutoDrainOptions());
  Run(2, 0.01);
  const absl::Time blamed_at = clock_.Now();
  ASSERT_TRUE(inventory_->SetExternalFindings("n1", "pingmesh", {PingmeshNicFinding(blamed_at)})
                  .ok());
  EXPECT_EQ(Metric("weft_controller_health_rule_firings_total", {{"rule", "pingmesh_nic"}}), 1);
  // Held for degrade_after (2 s) from the finding's since: DEGRADED, not before.
  Run(1, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
  ASSERT_EQ(Node().findings_size(), 1);
  EXPECT_EQ(Node().findings(0).rule(), "pingmesh_nic");
  EXPECT_EQ(Node().findings(0).device(), "n1/mlx5_1");
  Run(1, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_EQ(FirstChangeTo(weft::v1::NODE_STATE_DEGRADED), blamed_at + absl::Seconds(2));
  // The same finding again is not counted twice; auto-drain takes the node 5 s later,
  // naming the finding.
  ASSERT_TRUE(inventory_->SetExternalFindings("n1", "pingmesh", {PingmeshNicFinding(blamed_at)})
                  .ok());
  EXPECT_EQ(Metric("weft_controller_health_rule_firings_total", {{"rule", "pingmesh_nic"}}), 1);
  Run(5, 0.01);
  const weft::v1::NodeStatus drained = Node();
  ASSERT_EQ(drained.state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(drained.drain_reason(),
            "auto: pingmesh_nic on n1/mlx5_1: every probe of n1/mlx5_1 lost while its "
            "ToR's peers answer (DEGRADED for 5s)");
  EXPECT_EQ(Metric("weft_controller_health_findings", {{"rule", "pingmesh_nic"}}), 1);

  // Cleared by its source: HEALTHY after recover_after (10 s), then undrained.
  ASSERT_TRUE(inventory_->SetExternalFindings("n1", "pingmesh", {}).ok());
  EXPECT_EQ(Node().findings_size(), 0);
  Run(11, 0.01);
  EXPECT_EQ(Node().health(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(Metric("weft_controller_health_findings", {{"rule", "pingmesh_nic"}}), 0);
}

TEST_F(InventoryHealthTest, ExternalFindingsOfAnUnknownNodeAreRefused) {
  const absl::Status status =
      inventory_->SetExternalFindings("nope", "pingmesh", {PingmeshNicFinding(clock_.Now())});
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("nope"));
  EXPECT_EQ(Node().findings_size(), 0);
}

TEST_F(InventoryHealthTest, NeverUndoesAnOperatorDrain) {
  Configure(AutoDrainOptions());
  Run(3, 0.97);
  ASSERT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED);
  ASSERT_TRUE(inventory_->Drain("n1", "swap optics on mlx5_0").ok());
  EXPECT_EQ(Node().drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
  Run(5, 0.97);
  Run(120, 0.01);  // long healthy
  weft::v1::NodeStatus node = Node();
  EXPECT_EQ(node.state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(node.health(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(node.drain_reason(), "swap optics on mlx5_0");
  EXPECT_EQ(Metric("weft_controller_auto_drains_total"), 0);
  EXPECT_EQ(Metric("weft_controller_auto_undrains_total"), 0);
}

TEST_F(InventoryHealthTest, AnOperatorWhoDrainsAnAutoDrainedNodeTakesItOver) {
  Configure(AutoDrainOptions());
  Run(9, 0.97);
  ASSERT_EQ(Node().drained_by(), weft::v1::DRAIN_SOURCE_AUTO);
  auto taken = inventory_->Drain("n1", "RMA the NIC");
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
  EXPECT_EQ(taken->drain_reason(), "RMA the NIC");
  Run(120, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(Metric("weft_controller_auto_undrains_total"), 0);
  const auto drains = Events(weft::v1::EVENT_KIND_DRAINED);
  ASSERT_EQ(drains.size(), 2u);
  EXPECT_EQ(drains[1].drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
  EXPECT_NE(drains[1].message().find("operator took over the auto drain"), std::string::npos);
}

TEST_F(InventoryHealthTest, OperatorUndrainRestartsTheAutoDrainClock) {
  Configure(AutoDrainOptions());
  Run(9, 0.97);
  ASSERT_EQ(Node().state(), weft::v1::NODE_STATE_DRAINED);
  auto undrained = inventory_->Undrain("n1");
  ASSERT_TRUE(undrained.ok());
  EXPECT_EQ(undrained->state(), weft::v1::NODE_STATE_DEGRADED);  // still sick
  const absl::Time undrained_at = clock_.Now();
  Run(4, 0.97);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DEGRADED) << "not at once again";
  Run(1, 0.97);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(Metric("weft_controller_auto_drains_total"), 2);
  const auto undrains = Events(weft::v1::EVENT_KIND_UNDRAINED);
  ASSERT_EQ(undrains.size(), 1u);
  EXPECT_EQ(undrains[0].drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
  EXPECT_EQ(undrains[0].time_us(), absl::ToUnixMicros(undrained_at));
}

TEST_F(InventoryHealthTest, ASilentNodeIsAutoDrainedAsDown) {
  Configure(AutoDrainOptions());
  Run(2, 0.01);
  Run(4, 0, /*silent=*/true);  // DOWN after more than 3 s of silence
  const absl::Time down_at = FirstChangeTo(weft::v1::NODE_STATE_DOWN);
  ASSERT_NE(down_at, absl::InfiniteFuture());
  Run(4, 0, /*silent=*/true);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DOWN);
  Run(1, 0, /*silent=*/true);
  weft::v1::NodeStatus node = Node();
  ASSERT_EQ(node.state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(FirstChangeTo(weft::v1::NODE_STATE_DRAINED), down_at + absl::Seconds(5));
  EXPECT_EQ(node.drain_reason(), "auto: no telemetry (DOWN for 5s)");
  EXPECT_FALSE(node.reporting());

  // It comes back clean: undrained after 20 s of HEALTHY reports.
  Run(19, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_DRAINED);
  Run(2, 0.01);
  EXPECT_EQ(Node().state(), weft::v1::NODE_STATE_HEALTHY);
}

TEST_F(InventoryHealthTest, ListEventsFiltersByNodeAndTime) {
  ASSERT_TRUE(inventory_->Register(MakeNode("n2", 1, "r2"), 0).ok());
  Run(10, 0.97);
  ASSERT_TRUE(inventory_->Drain("n2", "test").ok());

  weft::v1::ListEventsRequest request;
  request.set_node("n2");
  weft::v1::ListEventsResponse n2 = inventory_->ListEvents(request);
  ASSERT_EQ(n2.events_size(), 3);
  EXPECT_EQ(n2.events(0).kind(), weft::v1::EVENT_KIND_REGISTERED);
  EXPECT_EQ(n2.events(0).message(), "session 1: rack r2, pod p1, 1 NIC, 1 GPU");
  EXPECT_EQ(n2.events(1).kind(), weft::v1::EVENT_KIND_STATE_CHANGED);  // silent: DOWN
  EXPECT_EQ(n2.events(1).to_state(), weft::v1::NODE_STATE_DOWN);
  EXPECT_EQ(n2.events(2).kind(), weft::v1::EVENT_KIND_DRAINED);
  EXPECT_EQ(n2.events(2).drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
  EXPECT_EQ(n2.events(2).from_state(), weft::v1::NODE_STATE_DOWN);
  EXPECT_EQ(n2.events(2).message(), "test");
  EXPECT_EQ(n2.capacity(), 10000u);

  // The last 5 s by the inventory's clock: only the drain (the rule fired at 2 s, n1
  // degraded at 3 s, n2 went DOWN at 3.25 s).
  weft::v1::ListEventsRequest recent;
  recent.set_within_ms(5000);
  weft::v1::ListEventsResponse last = inventory_->ListEvents(recent);
  ASSERT_EQ(last.events_size(), 1);
  EXPECT_EQ(last.events(0).node(), "n2");

  weft::v1::ListEventsRequest since;
  since.set_since_us(absl::ToUnixMicros(clock_.Now() - absl::Seconds(8)));
  weft::v1::ListEventsResponse from = inventory_->ListEvents(since);
  ASSERT_EQ(from.events_size(), 4);
  EXPECT_EQ(from.events(0).kind(), weft::v1::EVENT_KIND_RULE_FIRED);
  EXPECT_EQ(from.events(1).kind(), weft::v1::EVENT_KIND_STATE_CHANGED);
  EXPECT_EQ(from.events(1).node(), "n1");
  EXPECT_EQ(from.events(2).node(), "n2");
  EXPECT_FALSE(from.truncated());

  request.set_limit(1);
  weft::v1::ListEventsResponse newest = inventory_->ListEvents(request);
  ASSERT_EQ(newest.events_size(), 1);
  EXPECT_EQ(newest.events(0).kind(), weft::v1::EVENT_KIND_DRAINED);
  EXPECT_TRUE(newest.truncated());
}

TEST_F(InventoryHealthTest, RackAggregatesAndGaugesFollowTheInventory) {
  weft::v1::NodeInfo other = MakeNode("n2", 1, "r2");
  ASSERT_TRUE(inventory_->Register(other, 0).ok());
  Run(6, 0.97);  // n1 (r1) DEGRADED; n2 (r2) silent since registering: DOWN

  weft::v1::ListRacksResponse racks = inventory_->ListRacks();
  ASSERT_EQ(racks.racks_size(), 2);
  EXPECT_EQ(racks.racks(0).rack(), "r1");
  EXPECT_EQ(racks.racks(0).pod(), "p1");
  EXPECT_EQ(racks.racks(0).nodes().degraded(), 1u);
  EXPECT_DOUBLE_EQ(racks.racks(0).rates().tx_gbps(), 400.0);  // 2 NICs × 25 GB/s
  EXPECT_DOUBLE_EQ(racks.racks(0).rates().pfc_pause_us_per_s(), 980'000);
  // A share of time is the most-paused NIC's, not the sum over NICs.
  EXPECT_DOUBLE_EQ(racks.racks(0).rates().pfc_rx_pause_share(), 0.97);
  EXPECT_DOUBLE_EQ(racks.racks(0).rates().pfc_tx_pause_share(), 0.0);
  EXPECT_EQ(racks.racks(1).nodes().down(), 1u);
  ASSERT_EQ(racks.pods_size(), 1);
  EXPECT_EQ(racks.pods(0).racks(), 2u);
  EXPECT_EQ(racks.pods(0).nodes().total(), 2u);
  EXPECT_EQ(inventory_->ListRacks("p9").racks_size(), 0);

  const std::map<std::string, std::string> r1 = {{"pod", "p1"}, {"rack", "r1"}};
  EXPECT_DOUBLE_EQ(Metric("weft_rack_tx_bytes_per_second", r1), 50e9);
  EXPECT_DOUBLE_EQ(
      Metric("weft_rack_pfc_pause_share", {{"pod", "p1"}, {"rack", "r1"}, {"direction", "rx"}}),
      0.97);
  EXPECT_EQ(Metric("weft_rack_nodes", {{"pod", "p1"}, {"rack", "r1"}, {"state", "degraded"}}),
            1);
  EXPECT_EQ(Metric("weft_rack_nodes", {{"pod", "p1"}, {"rack", "r2"}, {"state", "down"}}), 1);

  // n2 moves to rack r3: r2's series go, r3's appear.
  other.set_rack("r3");
  ASSERT_TRUE(inventory_->Register(other, 1).ok());
  inventory_->Sweep();
  EXPECT_FALSE(
      MetricValue(registry_, "weft_rack_tx_bytes_per_second", {{"pod", "p1"}, {"rack", "r2"}})
          .has_value());
  EXPECT_EQ(Metric("weft_rack_nodes", {{"pod", "p1"}, {"rack", "r3"}, {"state", "healthy"}}),
            1);
}

// Durable state: a second Inventory over the same store is the controller after a
// restart.
class InventoryRestartTest : public ::testing::Test {
 protected:
  InventoryRestartTest() : metrics_(registry_) {
    auto opened = store::ControllerStore::OpenInMemory();
    EXPECT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
  }

  std::unique_ptr<Inventory> Start() {
    auto inventory =
        std::make_unique<Inventory>(&clock_, InventoryOptions{}, &metrics_, store_.get());
    EXPECT_TRUE(inventory->Restore().ok());
    return inventory;
  }

  uint64_t StoredCeiling(const std::string& name) {
    const auto nodes = store_->LoadNodes();
    for (const store::StoredNode& node : *nodes) {
      if (node.name == name) return node.epoch_ceiling;
    }
    return 0;
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_;
  std::unique_ptr<store::ControllerStore> store_;
};

TEST_F(InventoryRestartTest, NodesAndDrainsSurviveAndEpochsKeepGrowing) {
  uint64_t last_epoch = 0;
  {
    auto inventory = Start();
    ASSERT_TRUE(inventory->Register(MakeNode("n1", 2, "r7"), 0).ok());
    // Many reconnects of n2, more than one epoch block.
    for (uint64_t i = 0; i < kEpochBlock + 5; ++i) {
      auto r = inventory->Register(MakeNode("n2"), 0);
      ASSERT_TRUE(r.ok());
      last_epoch = r->session_epoch;
    }
    ASSERT_TRUE(inventory->Drain("n1", "bad optic", "alice").ok());
  }
  auto inventory = Start();
  auto n1 = inventory->GetNode("n1");
  ASSERT_TRUE(n1.ok()) << n1.status();
  EXPECT_EQ(n1->state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_FALSE(n1->reporting());
  EXPECT_EQ(n1->drain_reason(), "bad optic");
  EXPECT_EQ(n1->drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
  EXPECT_EQ(n1->info().rack(), "r7");
  EXPECT_EQ(n1->nics_size(), 2);
  EXPECT_EQ(inventory->GetNode("n2")->state(), weft::v1::NODE_STATE_DOWN);
  EXPECT_EQ(inventory->ListNodes().size(), 2u);

  // An agent that lost its epoch (last 0) and one that kept it both get a higher one,
  // and the old session is fenced.
  EXPECT_EQ(inventory->CheckSession("n2", last_epoch).code(), absl::StatusCode::kAborted);
  auto again = inventory->Register(MakeNode("n2"), 0);
  ASSERT_TRUE(again.ok());
  EXPECT_GT(again->session_epoch, last_epoch);
  EXPECT_EQ(inventory->GetNode("n2")->state(), weft::v1::NODE_STATE_HEALTHY);
  // Re-registering n1 does not undo the operator's drain.
  ASSERT_TRUE(inventory->Register(MakeNode("n1", 2, "r7"), 7).ok());
  EXPECT_EQ(inventory->GetNode("n1")->state(), weft::v1::NODE_STATE_DRAINED);
  ASSERT_TRUE(inventory->Undrain("n1").ok());

  auto restarted = Start();
  EXPECT_EQ(restarted->GetNode("n1")->state(), weft::v1::NODE_STATE_DOWN);
  EXPECT_EQ(restarted->GetNode("n1")->drain_reason(), "");
  auto third = restarted->Register(MakeNode("n2"), 0);
  ASSERT_TRUE(third.ok());
  EXPECT_GT(third->session_epoch, again->session_epoch);
}

TEST_F(InventoryRestartTest, ReconnectsWithinABlockDoNotWriteTheCeiling) {
  auto inventory = Start();
  ASSERT_TRUE(inventory->Register(MakeNode("n1"), 0).ok());
  const uint64_t ceiling = StoredCeiling("n1");
  EXPECT_EQ(ceiling, 1 + kEpochBlock);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(inventory->Register(MakeNode("n1"), 0).ok());
  EXPECT_EQ(StoredCeiling("n1"), ceiling);
  // A move to another rack is written at once.
  ASSERT_TRUE(inventory->Register(MakeNode("n1", 2, "r9"), 0).ok());
  EXPECT_EQ((*store_->LoadNodes())[0].rack, "r9");
}

}  // namespace
}  // namespace weft::controller
