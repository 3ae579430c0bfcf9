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
#include <filesystem>
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
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "tests/subprocess.h"

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

int Sh(const std::string& command) { return std::system(command.c_str()); }

// A state directory of its own for each run (a durable store outlives the test).
std::string FreshStateDir() {
  const std::string dir = TempPath(absl::StrCat(
      ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".state"));
  std::filesystem::remove_all(dir);
  return dir;
}

std::map<std::string, weft::v1::NodeStatus> ListNodes(const std::string& address) {
  auto admin = weft::v1::AdminService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  weft::v1::ListNodesResponse response;
  std::map<std::string, weft::v1::NodeStatus> nodes;
  if (!admin->ListNodes(&context, weft::v1::ListNodesRequest(), &response).ok()) return nodes;
  for (const auto& node : response.nodes()) nodes[node.info().name()] = node;
  return nodes;
}

// Waits until `predicate(nodes)` holds; returns whether it did within `timeout`.
template <typename Predicate>
bool WaitForNodes(const std::string& address, absl::Duration timeout, Predicate predicate) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (predicate(ListNodes(address))) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

// `extra`: e.g. --insecure, which a controller listening on a non-loopback address
// needs to run without TLS.
std::unique_ptr<Subprocess> StartController(const std::string& listen, const std::string& state,
                                            const std::string& log,
                                            std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {kController, "--listen", listen, "--metrics",
                                   absl::StrCat("127.0.0.1:", FreePort()),
                                   absl::StrCat("--telemetry_interval_ms=", kIntervalMs),
                                   "--state_dir", state};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Subprocess>(argv, log);
}

TEST(ControllerRestartTest, EveryAgentComesBackOnceWithJitteredRetries) {
  const int port = FreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  const std::string state = FreshStateDir();
  auto controller = StartController(address, state, TempPath("restart.controller1.log"));
  ASSERT_TRUE(weft::testing::WaitForPort(port, absl::Seconds(10))) << controller->Log();

  constexpr int kAgents = 12;
  std::vector<std::unique_ptr<Subprocess>> agents;
  for (int i = 0; i < kAgents; ++i) {
    agents.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{kAgent, "--node", absl::StrCat("gpu-r", i), "--rack",
                                 absl::StrCat("rack-", i % 3), "--controller", address,
                                 "--metrics", "off", "--health", "off",
                                 absl::StrCat("--interval_ms=", kIntervalMs), "--nics", "2"},
        TempPath(absl::StrCat("restart.agent", i, ".log"))));
  }
  auto all_healthy = [](const std::map<std::string, weft::v1::NodeStatus>& nodes) {
    if (nodes.size() != kAgents) return false;
    for (const auto& [name, node] : nodes) {
      if (node.state() != weft::v1::NODE_STATE_HEALTHY) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitForNodes(address, absl::Seconds(20), all_healthy)) << controller->Log();
  const std::map<std::string, weft::v1::NodeStatus> before = ListNodes(address);

  controller->Signal(SIGKILL);
  controller->Wait(absl::Seconds(5));
  absl::SleepFor(absl::Seconds(2));  // every agent notices and starts backing off
  const absl::Time restarted = absl::Now();
  controller = StartController(address, state, TempPath("restart.controller2.log"));
  ASSERT_TRUE(weft::testing::WaitForPort(port, absl::Seconds(10))) << controller->Log();

  // Back with fresh sessions: registered after the restart.
  const int64_t restarted_us = absl::ToUnixMicros(restarted);
  auto all_back = [&](const std::map<std::string, weft::v1::NodeStatus>& nodes) {
    if (!all_healthy(nodes)) return false;
    for (const auto& [name, node] : nodes) {
      if (node.registered_at_us() < restarted_us) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitForNodes(address, absl::Seconds(30), all_back))
      << "controller log:\n" << controller->Log() << "agent 0 log:\n" << agents[0]->Log();
  const std::map<std::string, weft::v1::NodeStatus> after = ListNodes(address);
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
  for (auto& agent : agents) {
    EXPECT_THAT(agent->Log(), ::testing::Not(HasSubstr("fenced by a newer session")));
  }
}

// A client that registers, opens its stream, sends one batch and then neither reads
// nor writes again (a hung agent process): the controller must go on serving everyone
// else, and call that node DOWN.
TEST(StuckStreamTest, OneStuckAgentStreamNeverBlocksTheOthers) {
  const int port = FreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  auto controller = StartController(address, FreshStateDir(), TempPath("stuck.controller.log"));
  ASSERT_TRUE(weft::testing::WaitForPort(port, absl::Seconds(10))) << controller->Log();

  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
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

  std::vector<std::unique_ptr<Subprocess>> agents;
  for (int i = 0; i < 4; ++i) {
    agents.push_back(std::make_unique<Subprocess>(
        std::vector<std::string>{kAgent, "--node", absl::StrCat("gpu-s", i), "--rack", "rack-s",
                                 "--controller", address, "--metrics", "off", "--health",
                                 "off", absl::StrCat("--interval_ms=", kIntervalMs), "--nics",
                                 "2"},
        TempPath(absl::StrCat("stuck.agent", i, ".log"))));
  }
  auto others_healthy_stuck_down = [](const std::map<std::string, weft::v1::NodeStatus>& nodes) {
    if (nodes.size() != 5) return false;
    for (const auto& [name, node] : nodes) {
      const auto want =
          name == "gpu-stuck" ? weft::v1::NODE_STATE_DOWN : weft::v1::NODE_STATE_HEALTHY;
      if (node.state() != want) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitForNodes(address, absl::Seconds(20), others_healthy_stuck_down))
      << controller->Log();
  // For the next few seconds every answer is prompt and the others stay HEALTHY.
  for (int i = 0; i < 10; ++i) {
    const absl::Time asked = absl::Now();
    const auto nodes = ListNodes(address);
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
    const int port = FreePort();
    address_ = absl::StrCat("198.51.100.1:", port);
    controller_ = StartController(address_, FreshStateDir(),
                                  TempPath("partition.controller.log"), {"--insecure"});
    ASSERT_TRUE(WaitForListening(absl::Seconds(10))) << controller_->Log();
    // One node inside the namespace, one on the host side (for placement).
    cut_off_ = std::make_unique<Subprocess>(
        std::vector<std::string>{"/usr/sbin/ip", "netns", "exec", ns_, kAgent, "--node",
                                 "gpu-p01", "--rack", "rack-p", "--controller", address_, "--insecure",
                                 "--metrics", "127.0.0.1:9977", "--health", "off",
                                 absl::StrCat("--interval_ms=", kIntervalMs), "--nics", "2"},
        TempPath("partition.agent-ns.log"));
    steady_ = std::make_unique<Subprocess>(
        std::vector<std::string>{kAgent, "--node", "gpu-p02", "--rack", "rack-p",
                                 "--controller", address_, "--insecure", "--metrics", "off", "--health",
                                 "off", absl::StrCat("--interval_ms=", kIntervalMs), "--nics",
                                 "2"},
        TempPath("partition.agent-host.log"));
  }
  void TearDown() override {
    cut_off_.reset();
    steady_.reset();
    controller_.reset();
    if (!ns_.empty()) Sh(absl::StrCat("ip netns del ", ns_, " 2>/dev/null"));
    if (!host_if_.empty()) Sh(absl::StrCat("ip link del ", host_if_, " 2>/dev/null"));
  }

  bool WaitForListening(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      grpc::ClientContext context;
      auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
      if (channel->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::milliseconds(200))) {
        return true;
      }
    }
    return false;
  }

  std::string StateOf(const std::string& node) {
    auto nodes = ListNodes(address_);
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
    return RunCommand({kWeftctl, "--controller", address_, "--insecure", "place", "--job", job,
                       "--nodes", "2"},
                      absl::Seconds(10));
  }

  std::string Logs() {
    return absl::StrCat("controller log:\n", controller_->Log(), "cut-off agent log:\n",
                        cut_off_->Log());
  }

  std::string ns_, host_if_, address_;
  std::unique_ptr<Subprocess> controller_, cut_off_, steady_;
};

TEST_F(PartitionTest, CutOffAgentGoesDownIsNotPlacedAndRecovers) {
  auto both_healthy = [](const std::map<std::string, weft::v1::NodeStatus>& nodes) {
    return nodes.size() == 2 && nodes.at("gpu-p01").state() == weft::v1::NODE_STATE_HEALTHY &&
           nodes.at("gpu-p02").state() == weft::v1::NODE_STATE_HEALTHY;
  };
  ASSERT_TRUE(WaitForNodes(address_, absl::Seconds(20), both_healthy)) << Logs();
  CommandResult placed = Place("before-partition");
  ASSERT_EQ(placed.exit_status, 0) << placed.err;
  ASSERT_EQ(RunCommand({kWeftctl, "--controller", address_, "--insecure", "release", "--job",
                        "before-partition"},
                       absl::Seconds(10))
                .exit_status,
            0);

  ASSERT_EQ(Sh(absl::StrCat("ip link set ", host_if_, " down")), 0);
  const double collections_at_cut = Collections();
  ASSERT_TRUE(WaitForNodes(address_, absl::Seconds(10),
                           [](const std::map<std::string, weft::v1::NodeStatus>& nodes) {
                             return nodes.count("gpu-p01") &&
                                    nodes.at("gpu-p01").state() == weft::v1::NODE_STATE_DOWN;
                           }))
      << "gpu-p01 is " << StateOf("gpu-p01") << "\n" << Logs();
  EXPECT_EQ(StateOf("gpu-p02"), "NODE_STATE_HEALTHY");
  // Placement now has one usable node: a two-node job is refused, saying so.
  CommandResult refused = Place("during-partition");
  EXPECT_NE(refused.exit_status, 0) << refused.out;
  EXPECT_THAT(refused.err, HasSubstr("1 are free and eligible"));
  EXPECT_THAT(refused.err, HasSubstr("not eligible: 1 unhealthy"));
  // The cut-off agent goes on collecting.
  absl::SleepFor(absl::Milliseconds(5 * kIntervalMs));
  EXPECT_GT(Collections(), collections_at_cut + 2) << cut_off_->Log();

  ASSERT_EQ(Sh(absl::StrCat("ip link set ", host_if_, " up")), 0);
  ASSERT_TRUE(WaitForNodes(address_, absl::Seconds(30), both_healthy))
      << "gpu-p01 is " << StateOf("gpu-p01") << "\n" << Logs();
  placed = Place("after-partition");
  EXPECT_EQ(placed.exit_status, 0) << placed.err << Logs();
}

}  // namespace
