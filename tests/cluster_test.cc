// Multi-process integration test: a real weft-controller and real weft-agent processes
// (simulated NIC backend) talking gRPC on loopback, ports chosen free at run time.
// Observed through the AdminService, the gRPC health service, weftctl and /metrics,
// the way an operator would.
#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using weft::testing::CommandResult;
using weft::testing::FreePort;
using weft::testing::RunCommand;
using weft::testing::Subprocess;
using weft::testing::TempPath;

constexpr char kController[] = "controller/weft-controller";
constexpr char kAgent[] = "agent/weft-agent";
constexpr char kWeftctl[] = "cli/weftctl";
constexpr int kIntervalMs = 200;
constexpr int kDownAfter = 3;
constexpr int kNics = 8;
constexpr int kLinkGbps = 400;
constexpr double kTrafficLevel = 0.5;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_port_ = FreePort();
    metrics_port_ = FreePort();
    controller_address_ = absl::StrCat("127.0.0.1:", controller_port_);
    // Kept across StartController calls: a restarted controller finds its state.
    state_dir_ = weft::testing::MakeTempDir("controller-state");
    StartController();
  }

  void StartController() {
    const std::string log = TempPath(absl::StrCat(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".controller.log"));
    controller_ = std::make_unique<Subprocess>(
        std::vector<std::string>{kController, "--listen", controller_address_, "--metrics",
                                 absl::StrCat("127.0.0.1:", metrics_port_),
                                 absl::StrCat("--telemetry_interval_ms=", kIntervalMs),
                                 absl::StrCat("--down_after=", kDownAfter), "--state_dir",
                                 state_dir_},
        log);
    // Connect only once it listens: a channel that met "connection refused" first would
    // sit in gRPC's reconnect backoff for a second or more.
    ASSERT_TRUE(weft::testing::WaitForPort(controller_port_, absl::Seconds(10)))
        << controller_->Log();
    channel_ = grpc::CreateChannel(controller_address_, grpc::InsecureChannelCredentials());
    admin_ = weft::v1::AdminService::NewStub(channel_);
  }

  // Starts (or restarts) the agent of `node`; extra flags such as {"--fault", "pfc_storm"}.
  void StartAgent(const std::string& node, const std::string& rack,
                  std::vector<std::string> extra = {}) {
    agent_health_ports_[node] = FreePort();
    std::vector<std::string> argv = {kAgent,
                                     "--node", node,
                                     "--rack", rack,
                                     "--pod", "pod-1",
                                     "--controller", controller_address_,
                                     "--metrics", "off",
                                     "--health", absl::StrCat("127.0.0.1:", agent_health_ports_[node]),
                                     absl::StrCat("--interval_ms=", kIntervalMs),
                                     absl::StrCat("--nics=", kNics),
                                     absl::StrCat("--traffic_level=", kTrafficLevel)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::string log = TempPath(absl::StrCat(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".", node, ".log"));
    agents_[node] = std::make_unique<Subprocess>(argv, log);
  }

  weft::v1::ListNodesResponse ListNodes() {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    weft::v1::ListNodesResponse response;
    grpc::Status status = admin_->ListNodes(&context, weft::v1::ListNodesRequest(), &response);
    if (!status.ok()) response.Clear();
    return response;
  }

  std::map<std::string, weft::v1::NodeStatus> NodesByName() {
    std::map<std::string, weft::v1::NodeStatus> out;
    const weft::v1::ListNodesResponse response = ListNodes();
    for (const auto& n : response.nodes()) out[n.info().name()] = n;
    return out;
  }

  // Polls until `predicate(nodes)` holds or `timeout` passes.
  template <typename Predicate>
  bool WaitFor(Predicate predicate, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (predicate(NodesByName())) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return predicate(NodesByName());
  }

  bool WaitForState(const std::string& node, weft::v1::NodeState state,
                    absl::Duration timeout) {
    return WaitFor(
        [&](const auto& nodes) {
          auto it = nodes.find(node);
          return it != nodes.end() && it->second.state() == state;
        },
        timeout);
  }

  // All `names` HEALTHY with rates from at least two samples.
  bool WaitForHealthyWithRates(const std::vector<std::string>& names, absl::Duration timeout) {
    return WaitFor(
        [&](const auto& nodes) {
          for (const auto& name : names) {
            auto it = nodes.find(name);
            if (it == nodes.end() || it->second.state() != weft::v1::NODE_STATE_HEALTHY ||
                it->second.rates().tx_gbps() <= 0) {
              return false;
            }
          }
          return true;
        },
        timeout);
  }

  CommandResult Weftctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {kWeftctl, "--controller", controller_address_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, absl::Seconds(10));
  }

  std::string DumpLogs() {
    std::string out = "controller log:\n" + controller_->Log();
    for (auto& [name, agent] : agents_) absl::StrAppend(&out, name, " log:\n", agent->Log());
    return out;
  }

  int controller_port_ = 0;
  int metrics_port_ = 0;
  std::string controller_address_;
  std::string state_dir_;
  std::unique_ptr<Subprocess> controller_;
  std::map<std::string, std::unique_ptr<Subprocess>> agents_;
  std::map<std::string, int> agent_health_ports_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<weft::v1::AdminService::Stub> admin_;
};

TEST_F(ClusterTest, AgentsRegisterWithInventoryAndReportPlausibleRates) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  StartAgent("gpu-b01", "rack-b");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(15)))
      << DumpLogs();

  auto nodes = NodesByName();
  ASSERT_EQ(nodes.size(), 3u);
  const double line_rate_gbps = kNics * kLinkGbps;
  for (const auto& [name, node] : nodes) {
    SCOPED_TRACE(name);
    EXPECT_EQ(node.info().nics_size(), kNics);
    EXPECT_EQ(node.info().pod(), "pod-1");
    EXPECT_GT(node.info().gpus_size(), 0);
    EXPECT_GE(node.session_epoch(), 1u);
    // Offered load is 50% of line rate with smooth variation around it.
    EXPECT_GT(node.rates().tx_gbps(), 0.2 * line_rate_gbps);
    EXPECT_LT(node.rates().tx_gbps(), 0.8 * line_rate_gbps);
    EXPECT_GT(node.rates().rx_gbps(), 0.2 * line_rate_gbps);
    EXPECT_LT(node.rates().rx_gbps(), 0.8 * line_rate_gbps);
    // No fault injected: no pause storm (well under 10% of each second per NIC).
    EXPECT_LT(node.rates().pfc_pause_us_per_s(), 0.1 * 1e6 * kNics);
    EXPECT_EQ(node.nics_size(), kNics);
    for (const auto& nic : node.nics()) {
      EXPECT_TRUE(nic.latest().rates_valid()) << nic.nic().device();
      EXPECT_GT(nic.latest().port_counters().xmit_bytes().total(), 0u);
    }
  }
  EXPECT_EQ(nodes["gpu-b01"].info().rack(), "rack-b");
}

TEST_F(ClusterTest, PfcStormFaultShowsOnlyOnFaultyNode) {
  StartAgent("gpu-a01", "rack-a", {"--fault", "pfc_storm"});
  StartAgent("gpu-a02", "rack-a");
  // The storm node turns DEGRADED about 2 s after its first stormy sample (health
  // rules); only the healthy node is waited for as HEALTHY.
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a02"}, absl::Seconds(15))) << DumpLogs();
  ASSERT_TRUE(WaitForState("gpu-a01", weft::v1::NODE_STATE_DEGRADED, absl::Seconds(10)))
      << DumpLogs();
  auto nodes = NodesByName();
  ASSERT_GE(nodes["gpu-a01"].findings_size(), 1);
  EXPECT_EQ(nodes["gpu-a01"].findings(0).rule(), "pfc_pause_storm");
  EXPECT_EQ(nodes["gpu-a01"].findings(0).device(), "mlx5_0");
  EXPECT_EQ(nodes["gpu-a02"].state(), weft::v1::NODE_STATE_HEALTHY);
  // One NIC paused for most of each second: hundreds of thousands of µs per second.
  EXPECT_GT(nodes["gpu-a01"].rates().pfc_pause_us_per_s(), 500'000);
  EXPECT_LT(nodes["gpu-a02"].rates().pfc_pause_us_per_s(),
            nodes["gpu-a01"].rates().pfc_pause_us_per_s() / 5);
}

TEST_F(ClusterTest, KilledAgentBecomesDownAndComesBackWithHigherEpoch) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  StartAgent("gpu-b01", "rack-b");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(15)))
      << DumpLogs();
  const uint64_t epoch_before = NodesByName()["gpu-a02"].session_epoch();

  agents_["gpu-a02"]->Signal(SIGKILL);
  agents_["gpu-a02"]->Wait(absl::Seconds(5));
  const absl::Time killed_at = absl::Now();
  ASSERT_TRUE(WaitForState("gpu-a02", weft::v1::NODE_STATE_DOWN, absl::Seconds(10)))
      << DumpLogs();
  // DOWN after down_after intervals (600 ms), not long after.
  EXPECT_LT(absl::Now() - killed_at, absl::Seconds(5));
  auto nodes = NodesByName();
  EXPECT_EQ(nodes["gpu-a01"].state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(nodes["gpu-b01"].state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(nodes["gpu-a02"].rates().tx_gbps(), 0);

  StartAgent("gpu-a02", "rack-a");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a02"}, absl::Seconds(15))) << DumpLogs();
  nodes = NodesByName();
  EXPECT_EQ(nodes.size(), 3u) << "a returning node must not be duplicated";
  EXPECT_GT(nodes["gpu-a02"].session_epoch(), epoch_before);
}

TEST_F(ClusterTest, AgentsReconnectAfterControllerRestart) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  StartAgent("gpu-b01", "rack-b");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(15)))
      << DumpLogs();

  controller_->Signal(SIGTERM);
  ASSERT_EQ(controller_->Wait(absl::Seconds(5)), 0) << "controller must exit 0 on SIGTERM\n"
                                                    << controller_->Log();
  EXPECT_TRUE(ListNodes().nodes().empty());
  absl::SleepFor(absl::Milliseconds(500));  // agents notice and start backing off
  StartController();

  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(20)))
      << DumpLogs();
  EXPECT_EQ(NodesByName().size(), 3u);
  for (auto& [name, agent] : agents_) EXPECT_TRUE(agent->running()) << name;
}

TEST_F(ClusterTest, WeftctlDrainUndrainAndJson) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01", "gpu-a02"}, absl::Seconds(15))) << DumpLogs();

  CommandResult drain = Weftctl({"drain", "gpu-a02", "--reason", "replace NIC mlx5_3"});
  ASSERT_EQ(drain.exit_status, 0) << drain.err;
  EXPECT_THAT(drain.out, HasSubstr("drained gpu-a02"));

  CommandResult table = Weftctl({"nodes"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("DRAINED"));
  EXPECT_THAT(table.out, HasSubstr("replace NIC mlx5_3"));

  CommandResult json = Weftctl({"nodes", "--output", "json"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  weft::v1::ListNodesResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &parsed).ok()) << json.out;
  ASSERT_EQ(parsed.nodes_size(), 2);
  std::map<std::string, weft::v1::NodeStatus> by_name;
  for (const auto& n : parsed.nodes()) by_name[n.info().name()] = n;
  EXPECT_EQ(by_name["gpu-a02"].state(), weft::v1::NODE_STATE_DRAINED);
  EXPECT_EQ(by_name["gpu-a02"].drain_reason(), "replace NIC mlx5_3");
  EXPECT_EQ(by_name["gpu-a01"].state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_GT(by_name["gpu-a01"].rates().tx_gbps(), 0);

  // A drained node stays DRAINED while it keeps reporting, until undrained.
  absl::SleepFor(absl::Milliseconds(3 * kIntervalMs));
  EXPECT_EQ(NodesByName()["gpu-a02"].state(), weft::v1::NODE_STATE_DRAINED);

  CommandResult undrain = Weftctl({"undrain", "gpu-a02"});
  ASSERT_EQ(undrain.exit_status, 0) << undrain.err;
  EXPECT_EQ(NodesByName()["gpu-a02"].state(), weft::v1::NODE_STATE_HEALTHY);

  CommandResult detail = Weftctl({"node", "gpu-a01"});
  ASSERT_EQ(detail.exit_status, 0) << detail.err;
  EXPECT_THAT(detail.out, HasSubstr("mlx5_7"));
  EXPECT_THAT(detail.out, HasSubstr("CLOSEST_NIC"));

  CommandResult unknown = Weftctl({"drain", "gpu-zz99", "--reason", "x"});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_THAT(unknown.err, HasSubstr("gpu-zz99"));
}

TEST_F(ClusterTest, HealthServiceAndMetricsOnBothDaemons) {
  StartAgent("gpu-a01", "rack-a");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01"}, absl::Seconds(15))) << DumpLogs();

  for (const std::string& address :
       {controller_address_, absl::StrCat("127.0.0.1:", agent_health_ports_["gpu-a01"])}) {
    auto health = grpc::health::v1::Health::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc::health::v1::HealthCheckResponse response;
    grpc::Status status =
        health->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
    ASSERT_TRUE(status.ok()) << address << ": " << status.error_message();
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << address;
  }

  CommandResult metrics = RunCommand(
      {"/usr/bin/curl", "-sf", absl::StrCat("http://127.0.0.1:", metrics_port_, "/metrics")},
      absl::Seconds(5));
  ASSERT_EQ(metrics.exit_status, 0) << metrics.err;
  EXPECT_THAT(metrics.out, HasSubstr("weft_controller_nodes{state=\"healthy\"} 1"));
  EXPECT_THAT(metrics.out, HasSubstr("weft_controller_telemetry_batches_total"));
}

TEST_F(ClusterTest, AgentStopsCleanlyOnSigterm) {
  StartAgent("gpu-a01", "rack-a");
  ASSERT_TRUE(WaitForHealthyWithRates({"gpu-a01"}, absl::Seconds(15))) << DumpLogs();
  const absl::Time start = absl::Now();
  agents_["gpu-a01"]->Signal(SIGTERM);
  EXPECT_EQ(agents_["gpu-a01"]->Wait(absl::Seconds(5)), 0) << agents_["gpu-a01"]->Log();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(DaemonConfigTest, BadConfigIsRefusedAndNothingStarts) {
  const std::string path = TempPath("bad-controller.yaml");
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("listen_address: 127.0.0.1:7999\ndown_after_intervals: 0\n", f);
  fclose(f);
  const int port = FreePort();
  CommandResult result =
      RunCommand({kController, "--config", path, "--listen", absl::StrCat("127.0.0.1:", port),
                  "--metrics", "127.0.0.1:0"},
                 absl::Seconds(10));
  EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("bad-controller.yaml:2:"));
  EXPECT_THAT(result.err, HasSubstr("down_after_intervals"));

  CommandResult agent = RunCommand({kAgent, "--controller", "127.0.0.1:1"}, absl::Seconds(10));
  EXPECT_EQ(agent.exit_status, 2) << agent.out << agent.err;
  EXPECT_THAT(agent.err, HasSubstr("node_name"));
}

}  // namespace
}  // namespace weft
