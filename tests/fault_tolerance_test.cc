// Fault tolerance with real processes: a controller killed and restarted under a
// running cluster, and an agent cut off from the controller by a network partition.
//
// Restart: 12 agents on loopback; the controller is SIGKILLed and started again on
// the same port and state directory. Every agent must come back by itself, once: the
// same 12 node names, each with a session epoch above the one before, all HEALTHY,
// and their re-registrations spread over time by the jittered backoff (no thundering
// herd of identical retries).
//
// Stuck stream: a client registers, opens its stream and then hangs; the controller
// keeps answering and keeps the four live agents HEALTHY, and calls the hung one DOWN.
//
// Partition: one agent runs in a network namespace joined to the host by a veth pair
// the test creates; the controller listens on the host end. Taking the link down cuts
// the agent off: the controller marks it DOWN and placement stops using it, while the
// agent keeps collecting; bringing the link up makes it HEALTHY and placeable again.
// Needs root (network namespaces); skips saying why otherwise.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace {

using ::testing::HasSubstr;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::RunCommand;
using NodeMap = std::map<std::string, weft::v1::NodeStatus>;

constexpr int kIntervalMs = 200;

int Sh(const std::string& command) { return std::system(command.c_str()); }

TEST(ControllerRestartTest, EveryAgentComesBackOnceWithJitteredRetries) {
  Cluster cluster({.telemetry_interval_ms = kIntervalMs});
  ASSERT_TRUE(cluster.StartController());

  constexpr int kAgents = 12;
  for (int i = 0; i < kAgents; ++i) {
    cluster.StartAgent({.name = absl::StrCat("gpu-r", i),
                        .rack = absl::StrCat("rack-", i % 3),
                        .interval_ms = kIntervalMs});
  }
  auto all_healthy = [](const NodeMap& nodes) {
    if (nodes.size() != kAgents) return false;
    for (const auto& [name, node] : nodes) {
      if (node.state() != weft::v1::NODE_STATE_HEALTHY) return false;
    }
    return true;
  };
  ASSERT_TRUE(cluster.WaitForNodes("12 nodes HEALTHY", absl::Seconds(20), all_healthy));
  const NodeMap before = cluster.NodesByName();

  cluster.StopController(SIGKILL, absl::Seconds(5));
  absl::SleepFor(absl::Seconds(2));  // every agent notices and starts backing off
  const absl::Time restarted = absl::Now();
  ASSERT_TRUE(cluster.StartController());

  // Back with fresh sessions: registered after the restart.
  const int64_t restarted_us = absl::ToUnixMicros(restarted);
  auto all_back = [&](const NodeMap& nodes) {
    if (!all_healthy(nodes)) return false;
    for (const auto& [name, node] : nodes) {
      if (node.registered_at_us() < restarted_us) return false;
    }
    return true;
  };
  ASSERT_TRUE(cluster.WaitForNodes("12 nodes HEALTHY, registered after the restart",
                                   absl::Seconds(30), all_back));
  const NodeMap after = cluster.NodesByName();
  ASSERT_EQ(after.size(), before.size());
  std::vector<int64_t> registered;
  for (const auto& [name, node] : after) {
    ASSERT_TRUE(before.count(name)) << "unknown node after restart: " << name;
    EXPECT_GT(node.session_epoch(), before.at(name).session_epoch()) << name;
    registered.push_back(node.registered_at_us());
  }
  std::sort(registered.begin(), registered.end());
  // Identical retry schedules would bring all 12 within a few milliseconds of each
  // other; jittered backoff spreads them over a good part of the backoff window.
  const int64_t spread_us = registered.back() - registered.front();
  EXPECT_GT(spread_us, 50'000) << "re-registrations within " << spread_us << " µs";
  // And every agent reconnected just once more (no duplicate sessions left behind).
  for (const auto& [name, agent] : cluster.agents()) {
    EXPECT_THAT(agent->Log(), ::testing::Not(HasSubstr("fenced by a newer session"))) << name;
  }
}

// A client that registers, opens its stream, sends one batch and then neither reads
// nor writes again (a hung agent process): the controller must go on serving everyone
// else, and call that node DOWN.
TEST(StuckStreamTest, OneStuckAgentStreamNeverBlocksTheOthers) {
  Cluster cluster({.telemetry_interval_ms = kIntervalMs});
  ASSERT_TRUE(cluster.StartController());

  auto channel = grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials());
  auto stub = weft::v1::AgentService::NewStub(channel);
  weft::v1::RegisterRequest request;
  request.mutable_node()->set_name("gpu-stuck");
  request.mutable_node()->set_rack("rack-s");
  weft::v1::Nic* nic = request.mutable_node()->add_nics();
  nic->set_device("mlx5_0");
  nic->set_port(1);
  nic->set_state(weft::v1::PORT_STATE_ACTIVE);
  weft::v1::RegisterResponse registered;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Register(&context, request, &registered).ok());
  }
  grpc::ClientContext stream_context;
  auto stream = stub->Connect(&stream_context);
  weft::v1::AgentMessage hello;
  hello.mutable_hello()->set_node_name("gpu-stuck");
  hello.mutable_hello()->set_session_epoch(registered.session_epoch());
  ASSERT_TRUE(stream->Write(hello));
  weft::v1::AgentMessage batch;
  batch.mutable_telemetry()->set_collected_at_us(absl::ToUnixMicros(absl::Now()));
  batch.mutable_telemetry()->add_samples()->set_device("mlx5_0");
  ASSERT_TRUE(stream->Write(batch));
  // ... and now it hangs.

  for (int i = 0; i < 4; ++i) {
    cluster.StartAgent(
        {.name = absl::StrCat("gpu-s", i), .rack = "rack-s", .interval_ms = kIntervalMs});
  }
  auto others_healthy_stuck_down = [](const NodeMap& nodes) {
    if (nodes.size() != 5) return false;
    for (const auto& [name, node] : nodes) {
      const auto want =
          name == "gpu-stuck" ? weft::v1::NODE_STATE_DOWN : weft::v1::NODE_STATE_HEALTHY;
      if (node.state() != want) return false;
    }
    return true;
  };
  ASSERT_TRUE(cluster.WaitForNodes("gpu-stuck DOWN, the other four HEALTHY", absl::Seconds(20),
                                   others_healthy_stuck_down));
  // For the next few seconds every answer is prompt and the others stay HEALTHY.
  for (int i = 0; i < 10; ++i) {
    const absl::Time asked = absl::Now();
    const auto nodes = cluster.NodesByName();
    EXPECT_LT(absl::Now() - asked, absl::Seconds(1));
    EXPECT_TRUE(others_healthy_stuck_down(nodes)) << "poll " << i;
    absl::SleepFor(absl::Milliseconds(2 * kIntervalMs));
  }
  stream_context.TryCancel();
}

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = absl::StrCat("weftpart", getpid());
    host_if_ = absl::StrCat("wpth", getpid() % 100000);
    if (Sh(absl::StrCat("ip netns add ", ns_)) != 0) {
      GTEST_SKIP() << "skipped: cannot create network namespaces (needs root and iproute2)";
    }
    // A /30 of TEST-NET-2 on a veth pair that exists only inside this test.
    ASSERT_EQ(Sh(absl::StrCat("ip link add ", host_if_, " type veth peer name eth0 netns ", ns_,
                              " && ip addr add 198.51.100.1/30 dev ", host_if_,
                              " && ip link set ", host_if_, " up && ip -n ", ns_,
                              " addr add 198.51.100.2/30 dev eth0 && ip -n ", ns_,
                              " link set eth0 up && ip -n ", ns_, " link set lo up")),
              0);
    // The controller listens on the host end of the link, so it needs --insecure to run
    // without TLS, as do the agents and weftctl.
    cluster_ = std::make_unique<Cluster>(weft::testing::ControllerOptions{
        .listen_host = "198.51.100.1", .telemetry_interval_ms = kIntervalMs,
        .flags = {"--insecure"}});
    cluster_->set_weftctl_flags({"--insecure"});
    ASSERT_TRUE(cluster_->StartController());
    // One node inside the namespace, one on the host side (for placement).
    cluster_->StartAgent({.name = "gpu-p01",
                          .rack = "rack-p",
                          .interval_ms = kIntervalMs,
                          .flags = {"--insecure", "--metrics", "127.0.0.1:9977"},
                          .wrapper = {"/usr/sbin/ip", "netns", "exec", ns_}});
    cluster_->StartAgent({.name = "gpu-p02",
                          .rack = "rack-p",
                          .interval_ms = kIntervalMs,
                          .flags = {"--insecure"}});
  }
  void TearDown() override {
    cluster_.reset();
    if (!ns_.empty()) Sh(absl::StrCat("ip netns del ", ns_, " 2>/dev/null"));
    if (!host_if_.empty()) Sh(absl::StrCat("ip link del ", host_if_, " 2>/dev/null"));
  }

  std::string StateOf(const std::string& node) {
    auto nodes = cluster_->NodesByName();
    if (!nodes.count(node)) return "absent";
    return weft::v1::NodeState_Name(nodes.at(node).state());
  }

  // Collections the cut-off agent has made (its own /metrics, inside the namespace).
  double Collections() {
    CommandResult result = RunCommand(
        {"/usr/sbin/ip", "netns", "exec", ns_, "curl", "-sf", "http://127.0.0.1:9977/metrics"},
        absl::Seconds(5));
    for (absl::string_view line : absl::StrSplit(result.out, '\n')) {
      if (absl::StartsWith(line, "weft_agent_collection_duration_seconds_count")) {
        double value = 0;
        if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) return value;
      }
    }
    return -1;
  }

  CommandResult Place(const std::string& job) {
    return cluster_->Weftctl({"place", "--job", job, "--nodes", "2"});
  }

  std::string ns_, host_if_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(PartitionTest, CutOffAgentGoesDownIsNotPlacedAndRecovers) {
  auto both_healthy = [](const NodeMap& nodes) {
    return nodes.size() == 2 && nodes.at("gpu-p01").state() == weft::v1::NODE_STATE_HEALTHY &&
           nodes.at("gpu-p02").state() == weft::v1::NODE_STATE_HEALTHY;
  };
  ASSERT_TRUE(cluster_->WaitForNodes("both nodes HEALTHY", absl::Seconds(20), both_healthy));
  CommandResult placed = Place("before-partition");
  ASSERT_EQ(placed.exit_status, 0) << placed.err;
  ASSERT_EQ(cluster_->Weftctl({"release", "--job", "before-partition"}).exit_status, 0);

  ASSERT_EQ(Sh(absl::StrCat("ip link set ", host_if_, " down")), 0);
  const double collections_at_cut = Collections();
  ASSERT_TRUE(cluster_->WaitForState("gpu-p01", weft::v1::NODE_STATE_DOWN, absl::Seconds(10)));
  EXPECT_EQ(StateOf("gpu-p02"), "NODE_STATE_HEALTHY");
  // Placement now has one usable node: a two-node job is refused, saying so.
  CommandResult refused = Place("during-partition");
  EXPECT_NE(refused.exit_status, 0) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("1 are free and eligible"));
  EXPECT_THAT(refused.err, HasSubstr("not eligible: 1 unhealthy"));
  // The cut-off agent goes on collecting.
  absl::SleepFor(absl::Milliseconds(5 * kIntervalMs));
  EXPECT_GT(Collections(), collections_at_cut + 2);

  ASSERT_EQ(Sh(absl::StrCat("ip link set ", host_if_, " up")), 0);
  ASSERT_TRUE(cluster_->WaitForNodes("both nodes HEALTHY again", absl::Seconds(30),
                                     both_healthy));
  placed = Place("after-partition");
  EXPECT_EQ(placed.exit_status, 0) << placed.err;
}

}  // namespace
