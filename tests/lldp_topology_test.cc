// LLDP through the whole system: Debian's real lldpd in a "switch" network namespace
// (chassis leaf-a01) cabled by veth pairs to a "host" namespace whose lldpd hears it;
// a real weft-agent (simulated NICs ens1np0/ens2np0, no --rack) reads that lldpd,
// registers with a real weft-controller, which infers the node's rack from LLDP; then
// `weftctl topology export` and `weftctl topology check` run against the live controller
// the way an operator would. Needs root (network namespaces) and lldpd; skips saying
// why otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/placement.pb.h"
#include "common/testing/temp_dir.h"
#include "common/testing/temp_file.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace {

using weft::testing::WriteTempFile;

using ::testing::HasSubstr;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::RunCommand;
using weft::testing::Subprocess;
using weft::testing::TempPath;


int Sh(const std::string& command) { return std::system(command.c_str()); }

class LldpTopologyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Sh("command -v lldpd >/dev/null && command -v lldpcli >/dev/null") != 0) {
      GTEST_SKIP() << "skipped: Debian's lldpd is not installed (apt-get install lldpd)";
    }
    suffix_ = absl::StrCat(getpid());
    sw_ = "weftls" + suffix_;
    host_ = "weftlh" + suffix_;
    if (Sh(absl::StrCat("ip netns add ", sw_, " && ip netns add ", host_)) != 0) {
      GTEST_SKIP() << "skipped: cannot create network namespaces (needs root and iproute2)";
    }
    // The simulated agent's NICs are mlx5_0 on ens1np0 and mlx5_1 on ens2np0.
    for (int i = 1; i <= 2; ++i) {
      ASSERT_EQ(Sh(absl::StrCat("ip link add ens", i, "np0 netns ", host_,
                                " type veth peer name swp", i, " netns ", sw_, " && ip -n ",
                                host_, " link set ens", i, "np0 up && ip -n ", sw_,
                                " link set swp", i, " up")),
                0);
    }
    mkdir("/run/lldpd", 0755);  // lldpd's chroot
    sock_dir_ = absl::StrCat("/tmp/weft-lt-", suffix_);  // socket paths < 108 bytes
    mkdir(sock_dir_.c_str(), 0755);
    const std::string sw_sock = sock_dir_ + "/sw.sock";
    host_sock_ = sock_dir_ + "/host.sock";
    sw_lldpd_ = &cluster_->Track("switch-lldpd", {"/usr/sbin/ip", "netns", "exec", sw_,
                                                  "/usr/sbin/lldpd", "-d", "-u", sw_sock, "-I",
                                                  "swp1,swp2"});
    host_lldpd_ = &cluster_->Track("host-lldpd", {"/usr/sbin/ip", "netns", "exec", host_,
                                                  "/usr/sbin/lldpd", "-d", "-u", host_sock_, "-I",
                                                  "ens1np0,ens2np0"});
    for (int i = 0; i < 50; ++i) {
      if (Sh(absl::StrCat("lldpcli -u ", sw_sock,
                          " configure system hostname leaf-a01 >/dev/null 2>&1")) == 0) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    Sh(absl::StrCat("lldpcli -u ", sw_sock, " configure lldp portidsubtype ifname >/dev/null"));
    Sh(absl::StrCat("lldpcli -u ", sw_sock, " configure lldp tx-interval 1 >/dev/null"));
    // lldpd starts paused until its own lldpcli has read /etc/lldpd.d and resumed it, and
    // a hostname set before that can be lost (the switch then still says its real name)
    // or the host can stay paused: resume both and re-apply until the switch's chassis
    // carries the name.
    bool named = false;
    for (int i = 0; i < 100 && !named; ++i) {
      Sh(absl::StrCat("lldpcli -u ", sw_sock, " resume >/dev/null 2>&1; lldpcli -u ", host_sock_,
                      " resume >/dev/null 2>&1"));
      named = RunCommand({"/usr/sbin/lldpcli", "-u", sw_sock, "-f", "keyvalue", "show", "chassis"},
                         absl::Seconds(5))
                  .out.find("chassis.name=leaf-a01") != std::string::npos;
      if (!named) {
        Sh(absl::StrCat("lldpcli -u ", sw_sock,
                        " configure system hostname leaf-a01 >/dev/null 2>&1"));
        absl::SleepFor(absl::Milliseconds(100));
      }
    }
    ASSERT_TRUE(named) << "the switch's lldpd never took the hostname leaf-a01\n"
                       << sw_lldpd_->Log();
    // The agent reads LLDP when it discovers, so start it once the host hears both ports.
    ASSERT_TRUE(HostHearsBothPorts(absl::Seconds(20)))
        << sw_lldpd_->Log() << host_lldpd_->Log();

    ASSERT_TRUE(cluster_->StartController());
    cluster_->StartAgent({.name = "gpu-x01",
                          .pod = "pod-1",
                          .nics = 2,
                          .gpus = 2,
                          .flags = {"--lldp", host_sock_}});
  }

  void TearDown() override {
    cluster_.reset();
    if (!sw_.empty()) {
      Sh(absl::StrCat("ip netns del ", sw_, " 2>/dev/null; ip netns del ", host_, " 2>/dev/null"));
    }
    if (!sock_dir_.empty()) Sh("rm -rf " + sock_dir_);
  }

  bool HostHearsBothPorts(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      CommandResult shown = RunCommand(
          {"/usr/sbin/lldpcli", "-u", host_sock_, "-f", "keyvalue", "show", "neighbors"},
          absl::Seconds(5));
      if (shown.out.find("ens1np0.chassis.name=leaf-a01") != std::string::npos &&
          shown.out.find("ens2np0.chassis.name=leaf-a01") != std::string::npos) {
        return true;
      }
      absl::SleepFor(absl::Milliseconds(250));
    }
    return false;
  }

  CommandResult Weftctl(std::vector<std::string> args) { return cluster_->Weftctl(args); }

  // The controller's topology once gpu-x01 is in it with both NICs' LLDP switches.
  weft::v1::StaticTopology ExportedTopology(absl::Duration timeout) {
    weft::v1::StaticTopology topology;
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      CommandResult exported = Weftctl({"topology", "export", "--format", "json"});
      topology.Clear();
      if (exported.exit_status == 0 &&
          google::protobuf::util::JsonStringToMessage(exported.out, &topology).ok() &&
          topology.nodes_size() == 1 && topology.nodes(0).nics_size() == 2 &&
          !topology.nodes(0).nics(1).lldp_switch().empty()) {
        return topology;
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    return topology;
  }

  std::string suffix_, sw_, host_, sock_dir_, host_sock_;
  // Reset in TearDown, before the namespaces its processes run in go.
  std::unique_ptr<Cluster> cluster_ = std::make_unique<Cluster>();
  Subprocess* sw_lldpd_ = nullptr;
  Subprocess* host_lldpd_ = nullptr;
};

TEST_F(LldpTopologyTest, ControllerInfersTheRackAndWeftctlChecksTheCabling) {
  const weft::v1::StaticTopology topology = ExportedTopology(absl::Seconds(20));
  ASSERT_EQ(topology.nodes_size(), 1);
  const weft::v1::SnapshotNode& node = topology.nodes(0);
  EXPECT_EQ(node.name(), "gpu-x01");
  // No --rack: the ToR both NICs reach becomes the rack.
  EXPECT_EQ(node.rack(), "leaf-a01");
  EXPECT_TRUE(node.rack_from_lldp());
  ASSERT_EQ(node.nics_size(), 2);
  EXPECT_EQ(node.nics(0).lldp_switch(), "leaf-a01");
  EXPECT_EQ(node.nics(1).lldp_switch(), "leaf-a01");

  // The operator's design agrees: exit 0.
  const std::string good = WriteTempFile("lt-good.yaml",
                                     "nodes:\n  - {name: gpu-x01, rack: rack-a}\n"
                                     "racks:\n  - {name: rack-a, tor: leaf-a01}\n");
  CommandResult ok = Weftctl({"topology", "check", "--topology", good});
  EXPECT_EQ(ok.exit_status, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("cabling matches the design (1 nodes checked)"));

  // A rail-optimised design: NIC 1 should reach leaf-a02 but is cabled to leaf-a01.
  const std::string rails = WriteTempFile(
      "lt-rails.yaml",
      "nodes:\n  - {name: gpu-x01, rack: rack-a}\n"
      "racks:\n  - {name: rack-a, rail_switches: [leaf-a01, leaf-a02]}\n");
  CommandResult miswired = Weftctl({"topology", "check", "--topology", rails});
  EXPECT_EQ(miswired.exit_status, 1) << miswired.out << miswired.err;
  EXPECT_THAT(miswired.out, HasSubstr("miswired"));
  EXPECT_THAT(miswired.out, HasSubstr("mlx5_1"));
  EXPECT_THAT(miswired.out, HasSubstr("leaf-a02"));
  EXPECT_THAT(miswired.out, HasSubstr("leaf-a01 port swp2"));
  EXPECT_THAT(miswired.out, ::testing::Not(HasSubstr("mlx5_0")));

  // The same check as JSON (a weft.v1.CablingReport) names one finding.
  CommandResult json = Weftctl({"topology", "check", "--topology", rails, "--output", "json"});
  weft::v1::CablingReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &report).ok()) << json.out;
  ASSERT_EQ(report.findings_size(), 1) << json.out;
  EXPECT_EQ(report.findings(0).problem(), weft::v1::CABLING_PROBLEM_MISWIRED);
  EXPECT_EQ(report.findings(0).node(), "gpu-x01");
}

}  // namespace
