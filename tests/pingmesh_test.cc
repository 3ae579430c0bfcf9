// Pingmesh end to end on this machine: a real weft-controller and twelve real weft-agents
// (two racks of six nodes, two simulated NICs each whose addresses are loopback aliases,
// 127.0.<rack>.<n>), each agent answering probes on its own UDP port. The controller
// computes the pinglists and sends them down the agent streams; the agents probe each
// other over real UDP sockets and send their windows back; the controller's localiser
// judges them. A NIC is killed with nftables (every UDP datagram to its address
// dropped): `weftctl pingmesh status` names it, an event fires for its node; the rule is
// removed: the verdict clears. `weftctl check` on a set with that node fails it alone
// while the NIC is dark and passes once it is back. With the health rule on (the
// default) and auto-drain, the blamed node becomes DEGRADED, is drained and comes back.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/testing/temp_dir.h"
#include "common/testing/temp_file.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/pingmesh.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using weft::testing::WriteTempFile;

using weft::testing::Cluster;
using weft::testing::CommandResult;

constexpr int kIntervalMs = 200;
// A dead NIC is named once the second window with its losses is judged: its end comes
// 0.25 to 0.75 s after the fault (250 ms windows), then the probe timeout (a loss is
// only known then), the trip and the controller's next pingmesh tick (50 ms). The agents
// send each window as it closes and the controller judges it once every node has, so
// nothing waits for a telemetry interval. The probe timeout is the default, 200 ms (with
// a 1 s timeout no fault could be named within 1 s).
constexpr absl::Duration kNameWithin = absl::Seconds(1);
// The test's own nftables table; the pid keeps a concurrent run elsewhere from deleting it.
const std::string& NftTable() {
  static const std::string* const table =
      new std::string(absl::StrCat("weft_pingmesh_test_", getpid()));
  return *table;
}

// Runs `nft` with `args`; its exit status.
int Nft(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/sbin/nft"};
  argv.insert(argv.end(), args.begin(), args.end());
  return weft::testing::RunCommand(argv, absl::Seconds(10)).exit_status;
}

// The pingmesh section of the controller's config, then `more` (YAML).
std::string ControllerConfig(absl::string_view more) {
  return WriteTempFile("controller.yaml", absl::StrCat(R"(
pingmesh:
  tor_uplinks: 1
  max_probes_per_node_per_s: 300
)",
                                                       more));
}

class PingmeshTest : public ::testing::Test {
 protected:
  // Verdicts are events and metrics only, so placement sees the blamed node as healthy
  // and the pre-job check is what leaves it out.
  PingmeshTest() : PingmeshTest("  degrade_blamed_nodes: false\n") {}
  explicit PingmeshTest(absl::string_view more_config)
      : cluster_({.telemetry_interval_ms = kIntervalMs,
                  .flags = {"--config", ControllerConfig(more_config)}}) {}

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "skipped: nftables needs root to drop a NIC's probes";
    if (Nft({"list", "tables"}) != 0) GTEST_SKIP() << "skipped: /usr/sbin/nft is not usable here";
    Nft({"delete", "table", "inet", NftTable()});
    ASSERT_EQ(Nft({"add", "table", "inet", NftTable()}), 0);
    // At input, so the sender's sendto succeeds and the datagram is lost on the way,
    // as on a fabric (an output drop fails sendto with EPERM instead).
    ASSERT_EQ(Nft({"add", "chain", "inet", NftTable(), "in",
                   "{ type filter hook input priority 0 ; }"}),
              0);
    ASSERT_TRUE(cluster_.StartController());
    for (int rack = 1; rack <= 2; ++rack) {
      for (int n = 1; n <= 6; ++n) {
        const std::string name = absl::StrCat(rack == 1 ? "a" : "b", n);
        const std::string config = WriteTempFile(absl::StrCat(name, ".yaml"), absl::StrCat(R"(
simulated:
  nics: 2
  nic_ipv4: ["127.0.)", rack, ".", 2 * n - 1, R"(", "127.0.)", rack, ".", 2 * n, R"("]
probe:
  udp_port: )", weft::testing::FreePort(), R"(
  bind_address: 0.0.0.0
)"));
        cluster_.StartAgent({.name = name,
                             .rack = rack == 1 ? "rack-a" : "rack-b",
                             .interval_ms = kIntervalMs,
                             .nics = 2,
                             .flags = {"--config", config}});
        names_.push_back(name);
      }
    }
    ASSERT_TRUE(cluster_.WaitForHealthy(names_, absl::Seconds(30)));
  }

  void TearDown() override { Nft({"delete", "table", "inet", NftTable()}); }

  // Every agent probes and windows are being judged.
  ::testing::AssertionResult WaitForProbing() {
    return weft::testing::WaitFor("every node probed and windows judged", absl::Seconds(30),
                                  [&](std::string* observed) {
                                    const weft::v1::PingmeshStatus s = Status();
                                    *observed = Verdicts(s);
                                    return s.probed_nodes() == 12 && s.windows_accepted() > 2000;
                                  });
  }

  // Every UDP datagram to `address` is dropped at input; nft's exit status.
  static int DropUdpTo(const std::string& address) {
    return Nft({"add", "rule", "inet", NftTable(), "in", "ip", "daddr", address, "meta",
                "l4proto", "udp", "drop"});
  }

  weft::v1::PingmeshStatus Status() {
    weft::v1::PingmeshStatus status;
    CommandResult result = cluster_.Weftctl({"pingmesh", "status", "--output", "json"});
    if (result.exit_status == 0) {
      if (!google::protobuf::util::JsonStringToMessage(result.out, &status).ok()) status.Clear();
    }
    return status;
  }

  // weft_controller_pingmesh_judged_windows_total by `when`.
  struct JudgedWindows {
    double reported = 0;
    double deadline = 0;
    JudgedWindows operator-(const JudgedWindows& other) const {
      return {reported - other.reported, deadline - other.deadline};
    }
  };
  JudgedWindows Judged() {
    const std::string metrics = cluster_.Metrics();
    auto value = [&](absl::string_view when) {
      return weft::testing::SeriesValue(
                 metrics, absl::StrCat("weft_controller_pingmesh_judged_windows_total{when=\"",
                                       when, "\"}"))
          .value_or(0);
    };
    return {value("reported"), value("deadline")};
  }

  static std::string Verdicts(const weft::v1::PingmeshStatus& status) {
    std::vector<std::string> lines;
    for (const auto& v : status.verdicts()) {
      lines.push_back(absl::StrCat(v.kind(), " ", v.component(), " ", v.problem()));
    }
    return absl::StrCat("plan ", status.plan_version(), ", ", status.probed_nodes(),
                        " nodes, windows accepted ", status.windows_accepted(), ", verdicts [",
                        absl::StrJoin(lines, "; "), "]");
  }

  Cluster cluster_;
  std::vector<std::string> names_;
};

TEST_F(PingmeshTest, ADeadNicIsNamedByTheControllerAndClearedWhenItComesBack) {
  // Every agent probes and is heard; nothing is blamed on a healthy fleet.
  ASSERT_TRUE(WaitForProbing());
  weft::v1::PingmeshStatus healthy = Status();
  EXPECT_THAT(healthy.verdicts(), ::testing::IsEmpty()) << Verdicts(healthy);
  EXPECT_TRUE(healthy.unprobed().empty());

  // b3's second NIC (127.0.2.6) goes dark: no datagram reaches it any more.
  ASSERT_EQ(DropUdpTo("127.0.2.6"), 0);
  const absl::Time killed = absl::Now();
  const JudgedWindows judged_at_fault = Judged();
  ASSERT_TRUE(weft::testing::WaitFor(
      "a verdict naming b3/mlx5_1", absl::Seconds(20), [&](std::string* observed) {
        const weft::v1::PingmeshStatus s = Status();
        *observed = Verdicts(s);
        for (const auto& v : s.verdicts()) {
          if (absl::StrContains(v.component(), "b3/mlx5_1") && v.nodes_size() == 1 &&
              v.nodes(0) == "b3") {
            return true;
          }
        }
        return false;
      }));
  const absl::Duration detected = absl::Now() - killed;
  const weft::v1::PingmeshStatus blamed = Status();
  // Only b3's NIC is blamed: its rack's other NICs and the uplinks are fine.
  for (const auto& v : blamed.verdicts()) {
    EXPECT_THAT(v.component(), ::testing::HasSubstr("b3/mlx5_1")) << Verdicts(blamed);
  }
  // The verdict is on /metrics too (the Grafana table of blamed components reads it).
  const double nic = cluster_.Metric("weft_controller_pingmesh_verdicts{kind=\"nic\",problem="
                                     "\"unreachable\"}").value_or(0);
  const double link =
      cluster_.Metric("weft_controller_pingmesh_verdicts{kind=\"link\",problem=\"loss\"}")
          .value_or(0);
  EXPECT_EQ(nic + link, 1.0);
  CommandResult events = cluster_.Weftctl({"events", "--node", "b3"});
  EXPECT_THAT(events.out, ::testing::HasSubstr("pingmesh blames"));
  std::cerr << "dead NIC named after " << absl::FormatDuration(detected) << "\n";
  EXPECT_LE(detected, kNameWithin);
  // Since the fault, every window was judged as soon as every agent had sent it, none
  // at the lateness deadline (the dead NIC's node reports its lost probes too).
  const JudgedWindows since_fault = Judged() - judged_at_fault;
  std::cerr << "windows judged since the fault: " << since_fault.reported
            << " as reported, " << since_fault.deadline << " at the deadline\n";
  EXPECT_GT(since_fault.reported, 0);
  EXPECT_EQ(since_fault.deadline, 0);

  // A pre-job check of a set with b3 in it fails b3 alone, naming its NIC.
  CommandResult failed = cluster_.Weftctl({"check", "--nodes", "a1,b3,b5", "--seconds", "3"},
                                          absl::Seconds(30));
  EXPECT_EQ(failed.exit_status, 1) << failed.out << failed.err;
  EXPECT_THAT(failed.out, ::testing::StartsWith("FAIL")) << failed.out;
  EXPECT_THAT(failed.out, ::testing::ContainsRegex("b3 +FAIL.*b3/mlx5_1")) << failed.out;
  EXPECT_THAT(failed.out, ::testing::ContainsRegex("a1 +pass")) << failed.out;
  EXPECT_THAT(failed.out, ::testing::ContainsRegex("b5 +pass")) << failed.out;

  // Placement with a pre-job check leaves b3 out: first placed on the three nodes it may
  // use, b3 fails the check, and the job is placed again on the other three.
  CommandResult placed = cluster_.Weftctl(
      {"place", "--job", "precheck-job", "--nodes", "3", "--within", "a1,b3,b5,a2",
       "--precheck", "3", "--output", "json"},
      absl::Seconds(30));
  ASSERT_EQ(placed.exit_status, 0) << placed.out << placed.err;
  EXPECT_THAT(placed.out, ::testing::Not(::testing::HasSubstr("\"node\": \"b3\",\n    \"gpu")))
      << placed.out;
  EXPECT_THAT(placed.out, ::testing::HasSubstr("\"precheck\"")) << placed.out;
  CommandResult reservations = cluster_.Weftctl({"reservations"});
  EXPECT_THAT(reservations.out, ::testing::HasSubstr("precheck-job"));
  std::cerr << "placement with precheck:\n" << placed.out << "\n";

  // Back: the verdict clears.
  ASSERT_EQ(Nft({"flush", "chain", "inet", NftTable(), "in"}), 0);
  ASSERT_TRUE(weft::testing::WaitFor("the verdict cleared", absl::Seconds(40),
                                     [&](std::string* observed) {
                                       const weft::v1::PingmeshStatus s = Status();
                                       *observed = Verdicts(s);
                                       return s.verdicts().empty();
                                     }));
  // The same check once the NIC is back: every node passes.
  CommandResult passed = cluster_.Weftctl({"check", "--nodes", "a1,b3,b5", "--seconds", "3"},
                                          absl::Seconds(30));
  EXPECT_EQ(passed.exit_status, 0) << passed.out << passed.err;
  EXPECT_THAT(passed.out, ::testing::StartsWith("PASS")) << passed.out;

  CommandResult matrix = cluster_.Weftctl({"pingmesh", "matrix"});
  EXPECT_EQ(matrix.exit_status, 0) << matrix.err;
  EXPECT_THAT(matrix.out, ::testing::HasSubstr("rack-a"));
  EXPECT_THAT(matrix.out, ::testing::HasSubstr("rack-b"));
}

// The health rule: a node pingmesh blames is DEGRADED, auto-drained with the finding as
// its reason, and undrained once its NIC is back.
class PingmeshHealthTest : public PingmeshTest {
 protected:
  PingmeshHealthTest()
      : PingmeshTest(R"(health:
  recover_after_ms: 3000
  auto_drain:
    enabled: true
    after_ms: 1000
    undrain_after_clean_ms: 1000
)") {}
};

TEST_F(PingmeshHealthTest, ABlamedNodeIsDegradedDrainedAndUndrainedWhenItsNicIsBack) {
  ASSERT_TRUE(WaitForProbing());
  ASSERT_EQ(DropUdpTo("127.0.2.6"), 0);
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(cluster_.WaitForState("b3", weft::v1::NODE_STATE_DRAINED, absl::Seconds(30)));
  const absl::Duration drained_after = absl::Now() - killed;
  const weft::v1::NodeStatus b3 = cluster_.NodesByName()["b3"];
  EXPECT_EQ(b3.drained_by(), weft::v1::DRAIN_SOURCE_AUTO);
  EXPECT_THAT(b3.drain_reason(),
              ::testing::ContainsRegex("^auto: pingmesh_(nic|link) on b3/mlx5_1"))
      << b3.drain_reason();
  EXPECT_EQ(b3.health(), weft::v1::NODE_STATE_DEGRADED);
  ASSERT_GE(b3.findings_size(), 1);
  EXPECT_THAT(b3.findings(0).rule(), ::testing::StartsWith("pingmesh_"));
  // Only b3: the nodes that probe it are not blamed for its NIC.
  for (const auto& [name, node] : cluster_.NodesByName()) {
    if (name == "b3") continue;
    EXPECT_EQ(node.state(), weft::v1::NODE_STATE_HEALTHY) << name;
  }
  std::cerr << "dead NIC's node auto-drained after " << absl::FormatDuration(drained_after)
            << ": " << b3.drain_reason() << "\n";

  ASSERT_EQ(Nft({"flush", "chain", "inet", NftTable(), "in"}), 0);
  ASSERT_TRUE(cluster_.WaitForState("b3", weft::v1::NODE_STATE_HEALTHY, absl::Seconds(60)));
  const weft::v1::NodeStatus back = cluster_.NodesByName()["b3"];
  EXPECT_EQ(back.findings_size(), 0);
  EXPECT_EQ(back.drained_by(), weft::v1::DRAIN_SOURCE_UNSPECIFIED);
  CommandResult events = cluster_.Weftctl({"events", "--node", "b3"});
  EXPECT_THAT(events.out, ::testing::HasSubstr("auto: pingmesh_"));
  EXPECT_THAT(events.out, ::testing::HasSubstr("undrained"));
}

}  // namespace
}  // namespace weft
