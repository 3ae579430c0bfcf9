// Multi-process integration test: a real weft-controller and real weft-agent processes
// (simulated NIC backend) talking gRPC on loopback, ports chosen free at run time.
// Observed through the AdminService, the gRPC health service, weftctl and /metrics,
// the way an operator would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/pingmesh.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using weft::testing::AgentOptions;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::FreePort;
using weft::testing::kAgentBinary;
using weft::testing::kControllerBinary;
using weft::testing::RunCommand;
using weft::testing::TempPath;

constexpr int kIntervalMs = 200;
constexpr int kDownAfter = 3;
constexpr int kNics = 8;
constexpr int kLinkGbps = 400;
constexpr double kTrafficLevel = 0.5;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cluster_.StartController()); }

  // Starts (or restarts) the agent of `node`; extra flags such as {"--fault", "pfc_storm"}.
  void StartAgent(const std::string& node, const std::string& rack,
                  std::vector<std::string> extra = {}) {
    extra.push_back(absl::StrCat("--traffic_level=", kTrafficLevel));
    cluster_.StartAgent({.name = node,
                         .rack = rack,
                         .pod = "pod-1",
                         .interval_ms = kIntervalMs,
                         .nics = kNics,
                         .health = true,
                         .flags = extra});
  }

  // Kept across StartController calls: a restarted controller finds its state.
  Cluster cluster_{{.telemetry_interval_ms = kIntervalMs,
                    .flags = {absl::StrCat("--down_after=", kDownAfter)}}};
};

TEST_F(ClusterTest, AgentsRegisterWithInventoryAndReportPlausibleRates) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  StartAgent("gpu-b01", "rack-b");
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(15)));

  auto nodes = cluster_.NodesByName();
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
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a02"}, absl::Seconds(15)));
  ASSERT_TRUE(cluster_.WaitForState("gpu-a01", weft::v1::NODE_STATE_DEGRADED, absl::Seconds(10)));
  auto nodes = cluster_.NodesByName();
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
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(15)));
  const uint64_t epoch_before = cluster_.NodesByName()["gpu-a02"].session_epoch();

  cluster_.agent("gpu-a02").Signal(SIGKILL);
  cluster_.agent("gpu-a02").Wait(absl::Seconds(5));
  const absl::Time killed_at = absl::Now();
  ASSERT_TRUE(cluster_.WaitForState("gpu-a02", weft::v1::NODE_STATE_DOWN, absl::Seconds(10)));
  // DOWN after down_after intervals (600 ms), not long after.
  EXPECT_LT(absl::Now() - killed_at, absl::Seconds(5));
  auto nodes = cluster_.NodesByName();
  EXPECT_EQ(nodes["gpu-a01"].state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(nodes["gpu-b01"].state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(nodes["gpu-a02"].rates().tx_gbps(), 0);

  StartAgent("gpu-a02", "rack-a");
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a02"}, absl::Seconds(15)));
  nodes = cluster_.NodesByName();
  EXPECT_EQ(nodes.size(), 3u) << "a returning node must not be duplicated";
  EXPECT_GT(nodes["gpu-a02"].session_epoch(), epoch_before);
}

TEST_F(ClusterTest, AgentsReconnectAfterControllerRestart) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  StartAgent("gpu-b01", "rack-b");
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(15)));

  ASSERT_EQ(cluster_.StopController(SIGTERM, absl::Seconds(5)), 0)
      << "controller must exit 0 on SIGTERM";
  EXPECT_TRUE(cluster_.ListNodes().nodes().empty());
  absl::SleepFor(absl::Milliseconds(500));  // agents notice and start backing off
  ASSERT_TRUE(cluster_.StartController());

  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01", "gpu-a02", "gpu-b01"}, absl::Seconds(20)));
  EXPECT_EQ(cluster_.NodesByName().size(), 3u);
  for (auto& [name, agent] : cluster_.agents()) EXPECT_TRUE(agent->running()) << name;
}

TEST_F(ClusterTest, WeftctlDrainUndrainAndJson) {
  StartAgent("gpu-a01", "rack-a");
  StartAgent("gpu-a02", "rack-a");
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01", "gpu-a02"}, absl::Seconds(15)));

  CommandResult drain = cluster_.Weftctl({"drain", "gpu-a02", "--reason", "replace NIC mlx5_3"});
  ASSERT_EQ(drain.exit_status, 0) << drain.err;
  EXPECT_THAT(drain.out, HasSubstr("drained gpu-a02"));

  CommandResult table = cluster_.Weftctl({"nodes"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("DRAINED"));
  EXPECT_THAT(table.out, HasSubstr("replace NIC mlx5_3"));

  CommandResult json = cluster_.Weftctl({"nodes", "--output", "json"});
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
  EXPECT_EQ(cluster_.NodesByName()["gpu-a02"].state(), weft::v1::NODE_STATE_DRAINED);

  CommandResult undrain = cluster_.Weftctl({"undrain", "gpu-a02"});
  ASSERT_EQ(undrain.exit_status, 0) << undrain.err;
  EXPECT_EQ(cluster_.NodesByName()["gpu-a02"].state(), weft::v1::NODE_STATE_HEALTHY);

  CommandResult detail = cluster_.Weftctl({"node", "gpu-a01"});
  ASSERT_EQ(detail.exit_status, 0) << detail.err;
  EXPECT_THAT(detail.out, HasSubstr("mlx5_7"));
  EXPECT_THAT(detail.out, HasSubstr("CLOSEST_NIC"));

  CommandResult unknown = cluster_.Weftctl({"drain", "gpu-zz99", "--reason", "x"});
  EXPECT_EQ(unknown.exit_status, 1);
  EXPECT_THAT(unknown.err, HasSubstr("gpu-zz99"));
}

TEST_F(ClusterTest, HealthServiceAndMetricsOnBothDaemons) {
  StartAgent("gpu-a01", "rack-a");
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01"}, absl::Seconds(15)));

  for (const std::string& address :
       {cluster_.address(), cluster_.health_address("gpu-a01")}) {
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

  const std::string metrics = cluster_.Metrics();
  ASSERT_FALSE(metrics.empty()) << "no /metrics on " << cluster_.metrics_address();
  EXPECT_THAT(metrics, HasSubstr("weft_controller_nodes{state=\"healthy\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("weft_controller_telemetry_batches_total"));
}

// Agents sharing this host each answer probes on a port of their own (the harness's
// probe option) and are all probed, for real; an agent given a port that something else
// holds says so in its log and on its /metrics, and the controller leaves it out.
TEST_F(ClusterTest, AgentsSharingAHostProbeEachOtherAndATakenProbePortIsSaid) {
  for (const std::string node : {"gpu-a01", "gpu-a02", "gpu-b01"}) {
    cluster_.StartAgent({.name = node,
                         .rack = node == "gpu-b01" ? "rack-b" : "rack-a",
                         .pod = "pod-1",
                         .interval_ms = kIntervalMs,
                         .probe = true});
  }
  const int held = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(held, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  socklen_t any_len = sizeof(any);
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&any), &any_len), 0);
  const std::string taken = absl::StrCat(ntohs(any.sin_port));
  const std::string agent_metrics = absl::StrCat("127.0.0.1:", FreePort());
  cluster_.StartAgent({.name = "gpu-b02",
                       .rack = "rack-b",
                       .pod = "pod-1",
                       .interval_ms = kIntervalMs,
                       .flags = {"--probe_port", taken, "--metrics", agent_metrics}});
  ASSERT_TRUE(
      cluster_.WaitForHealthy({"gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"}, absl::Seconds(20)));

  weft::v1::PingmeshStatus status;
  ASSERT_TRUE(weft::testing::WaitFor(
      "three nodes probed, windows judged", absl::Seconds(30), [&](std::string* observed) {
        CommandResult result = cluster_.Weftctl({"pingmesh", "status", "--output", "json"});
        status.Clear();
        if (result.exit_status != 0 ||
            !google::protobuf::util::JsonStringToMessage(result.out, &status).ok()) {
          *observed = result.out + result.err;
          return false;
        }
        *observed = status.DebugString();
        return status.probed_nodes() == 3 && status.windows_accepted() >= 100;
      }));
  // Answered probes: a healthy fleet, nothing blamed.
  EXPECT_TRUE(status.verdicts().empty()) << status.DebugString();
  EXPECT_THAT(absl::StrJoin(status.unprobed(), "\n"), HasSubstr("gpu-b02"));
  CommandResult matrix = cluster_.Weftctl({"pingmesh", "matrix"});
  EXPECT_THAT(matrix.out, HasSubstr("rack-b")) << matrix.err;

  EXPECT_THAT(cluster_.agent("gpu-b02").Log(),
              HasSubstr(absl::StrCat("pingmesh: NOT answering probes: cannot bind UDP port ",
                                     taken)));
  EXPECT_THAT(cluster_.agent("gpu-b02").Log(), HasSubstr("--probe_port"));
  const std::string scraped =
      RunCommand({"/usr/bin/curl", "-sf", absl::StrCat("http://", agent_metrics, "/metrics")},
                 absl::Seconds(5))
          .out;
  EXPECT_EQ(weft::testing::SeriesValue(scraped, absl::StrCat("weft_agent_pingmesh_responder_up{"
                                                             "node=\"gpu-b02\",port=\"",
                                                             taken, "\"}")),
            0)
      << scraped;
  close(held);
}

TEST_F(ClusterTest, AgentStopsCleanlyOnSigterm) {
  StartAgent("gpu-a01", "rack-a");
  ASSERT_TRUE(cluster_.WaitForHealthy({"gpu-a01"}, absl::Seconds(15)));
  const absl::Time start = absl::Now();
  cluster_.agent("gpu-a01").Signal(SIGTERM);
  EXPECT_EQ(cluster_.agent("gpu-a01").Wait(absl::Seconds(5)), 0) << cluster_.agent("gpu-a01").Log();
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
      RunCommand({kControllerBinary, "--config", path, "--listen", absl::StrCat("127.0.0.1:", port),
                  "--metrics", "127.0.0.1:0"},
                 absl::Seconds(10));
  EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("bad-controller.yaml:2:"));
  EXPECT_THAT(result.err, HasSubstr("down_after_intervals"));

  CommandResult agent =
      RunCommand({kAgentBinary, "--controller", "127.0.0.1:1"}, absl::Seconds(10));
  EXPECT_EQ(agent.exit_status, 2) << agent.out << agent.err;
  EXPECT_THAT(agent.err, HasSubstr("node_name"));
}

}  // namespace
}  // namespace weft
