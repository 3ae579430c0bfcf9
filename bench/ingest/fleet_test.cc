// The fleet against a real ControllerServer in-process (127.0.0.1:0, FakeClock so
// liveness never trips on a loaded machine): registrations, streams, batches accepted,
// the stats the benchmark reads, and a fenced stream counted as a failure.
#include "bench/ingest/fleet.h"

#include <functional>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "bench/ingest/process_stats.h"
#include "common/daemon_config.h"
#include "common/fake_clock.h"
#include "controller/server/controller_server.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::bench {
namespace {

bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return done();
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    weft::v1::ControllerConfig config = DefaultControllerConfig();
    config.set_listen_address("127.0.0.1:0");
    config.set_metrics_address("127.0.0.1:0");
    config.set_telemetry_interval_ms(100);
    server_ = *controller::ControllerServer::Create(config, &clock_,
                                                    std::make_shared<prometheus::Registry>());
    ASSERT_TRUE(server_->Start().ok());
  }

  FleetOptions Options() const {
    FleetOptions options;
    options.controller_address = server_->listen_address();
    options.interval = absl::Milliseconds(100);
    options.max_connecting = 4;  // fewer than the nodes: the limit must not stall growth
    return options;
  }

  double Metric(const std::string& name) {
    absl::StatusOr<std::string> text = FetchMetrics(server_->metrics_address());
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return -1;
    const auto sums = SumSeriesByName(*text);
    auto it = sums.find(name);
    return it == sums.end() ? 0 : it->second;
  }

  FakeClock clock_;
  std::unique_ptr<controller::ControllerServer> server_;
};

TEST_F(FleetTest, NodesRegisterStreamAndEveryBatchIsAccepted) {
  Fleet fleet(Options());
  ASSERT_TRUE(fleet.GrowTo(10, absl::Seconds(30)).ok());
  EXPECT_EQ(fleet.stats().nodes, 10);
  EXPECT_EQ(fleet.stats().streaming, 10);
  ASSERT_TRUE(fleet.GrowTo(16, absl::Seconds(30)).ok());
  EXPECT_EQ(fleet.stats().streaming, 16);

  // Each node writes about one batch per 100 ms.
  // Rates need two batches of a node: wait for every node's, not for a fleet-wide count
  // (the last nodes to join may lag the first by several batches on a slow machine).
  std::vector<weft::v1::NodeStatus> nodes;
  ASSERT_TRUE(Eventually([&] {
    nodes = server_->inventory().ListNodes();
    if (nodes.size() != 16u) return false;
    for (const weft::v1::NodeStatus& node : nodes) {
      if (node.rates().tx_gbps() <= 0) return false;
    }
    return fleet.stats().batches_sent >= 16 * 8;
  }));
  for (const weft::v1::NodeStatus& node : nodes) {
    EXPECT_EQ(node.state(), weft::v1::NODE_STATE_HEALTHY) << node.info().name();
    EXPECT_EQ(node.info().nics_size(), 8);
    EXPECT_EQ(node.info().rack(), "rack-0000");
    EXPECT_EQ(node.info().pod(), "pod-000");
    EXPECT_GT(node.rates().tx_gbps(), 8 * 400 * 0.3) << node.info().name();
  }
  absl::StatusOr<std::vector<controller::WindowSample>> window =
      server_->inventory().NicWindow(nodes[0].info().name(), "mlx5_3", 1);
  ASSERT_TRUE(window.ok());
  EXPECT_GE(window->size(), 3u);
  EXPECT_TRUE(window->back().rates_valid);

  fleet.Stop();
  const FleetStats stats = fleet.stats();
  // Every batch written reached the controller and was accepted. A write that completed
  // with ok=false while Stop cancelled the streams may still have been sent (gRPC reports
  // the cancellation, not whether the bytes left), so those count either way.
  EXPECT_TRUE(Eventually([&] {
    return Metric("weft_controller_telemetry_batches_total") >=
           static_cast<double>(stats.batches_sent - stats.write_failures);
  })) << Metric("weft_controller_telemetry_batches_total") << " accepted, "
      << stats.batches_sent << " sent, " << stats.write_failures << " writes failed";
  EXPECT_LE(Metric("weft_controller_telemetry_batches_total"),
            static_cast<double>(stats.batches_sent));
  EXPECT_EQ(stats.register_failures, 0);
  EXPECT_EQ(stats.stream_failures, 0) << absl::StrJoin(fleet.failure_samples(), "; ");
  EXPECT_EQ(Metric("weft_controller_telemetry_rejected_total"), 0);
  EXPECT_EQ(Metric("weft_controller_registrations_total"), 16);
}

// A newer session of a node (someone else registered it) makes the controller end the
// old stream at its next batch; the fleet sees the write fail, collects the status and
// counts the failure, and the other nodes carry on.
TEST_F(FleetTest, AFencedStreamIsCountedWithItsStatus) {
  FleetOptions options = Options();
  options.node_prefix = "fenced-";
  options.sender_threads = 2;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.GrowTo(3, absl::Seconds(30)).ok());
  absl::StatusOr<weft::v1::NodeStatus> node = server_->inventory().GetNode("fenced-000001");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(server_->inventory().Register(node->info(), node->session_epoch()).ok());
  ASSERT_TRUE(Eventually([&] { return fleet.stats().stream_failures == 1; }));
  EXPECT_EQ(fleet.stats().streaming, 2);
  const std::vector<std::string> failures = fleet.failure_samples();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_TRUE(absl::StrContains(failures[0], "stream fenced-000001"));
  EXPECT_TRUE(absl::StrContains(failures[0], "superseded")) << failures[0];
  const int64_t sent = fleet.stats().batches_sent;
  ASSERT_TRUE(Eventually([&] { return fleet.stats().batches_sent >= sent + 6; }));
  EXPECT_EQ(fleet.stats().stream_failures, 1);
}

TEST_F(FleetTest, AnUnreachableControllerCountsRegisterFailures) {
  FleetOptions options = Options();
  options.controller_address = "127.0.0.1:1";  // nothing listens there
  options.register_timeout = absl::Seconds(1);
  Fleet fleet(options);
  const absl::Status grown = fleet.GrowTo(2, absl::Seconds(30));
  // Register waits for a connection until its deadline (DEADLINE_EXCEEDED): the nodes
  // settle as failed, and GrowTo returns.
  EXPECT_TRUE(grown.ok()) << grown;
  EXPECT_EQ(fleet.stats().register_failures, 2);
  EXPECT_EQ(fleet.stats().streaming, 0);
  ASSERT_FALSE(fleet.failure_samples().empty());
  EXPECT_TRUE(absl::StrContains(fleet.failure_samples()[0], "register "))
      << fleet.failure_samples()[0];
}

}  // namespace
}  // namespace weft::bench
