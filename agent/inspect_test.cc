// `weft-agent inspect` as an operator runs it: the real binary against a fixture tree
// that mirrors an mlx5 node, in table and JSON form.
#include "agent/inspect.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/text_output.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;
using weft::testing::RunCommand;
namespace fs = std::filesystem;

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = weft::testing::TempPath("inspect_root");
    ASSERT_TRUE(weft::testing::MaterializeFixture("tests/fixtures/mlx5_no_cc.tree", root_).ok());
  }
  std::string root_;
};

TEST_F(InspectTest, TableShowsNicsCountersAndWhyOneIsMissing) {
  auto result = RunCommand({"agent/weft-agent", "inspect", "--root", root_}, absl::Seconds(10));
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_THAT(out, HasSubstr("mlx5_0  1     ens1f0np0  0000:19:00.0"));
  EXPECT_THAT(out, HasSubstr("ACTIVE"));
  EXPECT_THAT(out, HasSubstr("ROCEV2_GIDS"));
  // port_rcv_data of mlx5_0 is (10^12 + h) words; the table shows bytes.
  EXPECT_THAT(out, HasSubstr("rcv_bytes"));
  EXPECT_THAT(out, HasSubstr("np_cnp_sent"));
  // mlx5_1 lacks the congestion group: "-" in its column and a line naming them.
  EXPECT_THAT(out, HasSubstr("np_cnp_sent                 7270963        -\n"));
  EXPECT_THAT(out, HasSubstr("missing mlx5_1 port 1: np_cnp_sent, np_ecn_marked_roce_packets, "
                             "rp_cnp_handled, rp_cnp_ignored\n"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("missing mlx5_0")));
  EXPECT_THAT(out, HasSubstr("(none found)"));  // no GPUs in this fixture
  // The real libibverbs ran too: on a host without RDMA devices it says so and the
  // fixture's NICs are seen through sysfs only.
  EXPECT_THAT(out, HasSubstr("SEEN_BY"));
  if (out.find("verbs+sysfs") == std::string::npos) {
    EXPECT_THAT(out, HasSubstr("note    libibverbs lists no device"));
    EXPECT_THAT(out, HasSubstr("discovery from sysfs only"));
  }
}

TEST_F(InspectTest, JsonParsesAsANodeSnapshot) {
  auto result = RunCommand({"agent/weft-agent", "inspect", "--root", root_, "--output", "json"},
                           absl::Seconds(10));
  ASSERT_EQ(result.exit_status, 0) << result.err;
  weft::v1::NodeSnapshot snapshot;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(result.out, &snapshot).ok())
      << result.out;
  ASSERT_EQ(snapshot.node().nics_size(), 2);
  ASSERT_EQ(snapshot.telemetry().samples_size(), 2);
  EXPECT_TRUE(snapshot.telemetry().samples(0).has_congestion());
  EXPECT_FALSE(snapshot.telemetry().samples(1).has_congestion());
  EXPECT_EQ(snapshot.telemetry().samples(0).port_counters().rcv_bytes().total() % 4, 0u);
}

TEST_F(InspectTest, TunablesOfAFixtureNodeWithWhySomeCannotBeRead) {
  for (const char* tree : {"cc_params.tree", "rdma_cm.tree"}) {
    ASSERT_TRUE(weft::testing::MaterializeFixture(
                    absl::StrCat("agent/tunables/testdata/", tree), root_).ok());
  }
  auto table = RunCommand({"agent/weft-agent", "inspect", "--root", root_}, absl::Seconds(10));
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("QoS and DCQCN tunables"));
  EXPECT_THAT(table.out, HasSubstr("rp_time_reset                  300"));
  EXPECT_THAT(table.out, HasSubstr("rp_dce_tcp_g                   1019"));
  // The fixture's netdevs do not exist on this host: the kernel's ENODEV, per NIC.
  EXPECT_THAT(table.out, HasSubstr("tunable mlx5_0: ets, pfc_priorities, dscp_to_priority, trust: "
                                   "ens1f0np0: RTM_GETDCB DCB_CMD_IEEE_GET: No such device"));
  EXPECT_THAT(table.out, HasSubstr("rp_enabled_priorities, np_enabled_priorities: not settable on "
                                   "this node: no per-priority DCQCN switches"));

  auto json = RunCommand({"agent/weft-agent", "inspect", "--root", root_, "--output", "json"},
                         absl::Seconds(10));
  ASSERT_EQ(json.exit_status, 0) << json.err;
  weft::v1::NodeSnapshot snapshot;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &snapshot).ok()) << json.out;
  ASSERT_EQ(snapshot.tunables_size(), 2);
  EXPECT_EQ(snapshot.tunables(1).device(), "mlx5_1");
  EXPECT_EQ(snapshot.tunables(1).dcqcn().rp_time_reset(), 300u);
  EXPECT_EQ(snapshot.tunables(1).dcqcn().np_cnp_prio_mode(), 1u);
  EXPECT_TRUE(snapshot.tunables(0).qos().has_default_roce_tos());
  EXPECT_EQ(snapshot.tunables(0).qos().default_roce_tos(), 0u);
  EXPECT_EQ(snapshot.tunables(0).unreadable_size(), 6);  // 4 DCB + 2 switch lists
}

TEST_F(InspectTest, TunablesOfTheSimulatedBackend) {
  auto json = RunCommand({"agent/weft-agent", "inspect", "--backend", "simulated", "--nics", "2",
                          "--lldp", "off", "--output", "json"},
                         absl::Seconds(10));
  ASSERT_EQ(json.exit_status, 0) << json.err;
  weft::v1::NodeSnapshot snapshot;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &snapshot).ok()) << json.out;
  ASSERT_EQ(snapshot.tunables_size(), 2);
  const weft::v1::NicTunablesReading& nic = snapshot.tunables(0);
  EXPECT_EQ(nic.unreadable_size(), 0);
  EXPECT_EQ(nic.qos().trust(), weft::v1::TRUST_MODE_DSCP);
  ASSERT_EQ(nic.qos().pfc_priorities_size(), 1);
  EXPECT_EQ(nic.qos().pfc_priorities(0), 3u);
  EXPECT_EQ(nic.qos().dscp_to_priority().at(26), 3u);
  EXPECT_EQ(nic.dcqcn().rp_enabled_priorities_size(), 8);
  EXPECT_EQ(nic.dcqcn().rp_gd(), 11u);

  auto table = RunCommand({"agent/weft-agent", "inspect", "--backend", "simulated", "--nics", "2",
                           "--lldp", "off"},
                          absl::Seconds(10));
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("dscp_to_priority               0:0,26:3,48:6"));
  EXPECT_THAT(table.out, HasSubstr("rp_enabled_priorities          0,1,2,3,4,5,6,7"));
}

// What `inspect --output json` says of a fixture, without what depends on the moment
// or the host: timestamps, libibverbs' view (this host's devices, not the fixture's),
// the ethtool ioctl's answer for the fixture's netdevs and the tunables' reasons (they
// name the temporary root and this host's netdevs).
void DropContaining(google::protobuf::RepeatedPtrField<std::string>* lines,
                    const std::string& text) {
  auto kept = std::remove_if(lines->begin(), lines->end(), [&text](const std::string& line) {
    return line.find(text) != std::string::npos;
  });
  lines->erase(kept, lines->end());
}

weft::v1::NodeSnapshot HostIndependent(weft::v1::NodeSnapshot snapshot) {
  snapshot.mutable_telemetry()->clear_collected_at_us();
  for (weft::v1::NicSample& sample : *snapshot.mutable_telemetry()->mutable_samples()) {
    sample.clear_timestamp_us();
    DropContaining(sample.mutable_warnings(), "ethtool statistics");
  }
  DropContaining(snapshot.mutable_notes(), "libibverbs");
  for (weft::v1::Nic& nic : *snapshot.mutable_node()->mutable_nics()) {
    nic.clear_discovered_by();
    DropContaining(nic.mutable_discovery_warnings(), "libibverbs");
  }
  for (weft::v1::NicTunablesReading& nic : *snapshot.mutable_tunables()) {
    for (weft::v1::ParameterError& error : *nic.mutable_unreadable()) error.clear_reason();
  }
  return snapshot;
}

// Each real-host shape (tests/fixtures/generate.py) against the exact JSON inspect must
// print for it (tests/fixtures/<shape>.inspect.json). WEFT_WRITE_GOLDENS_TO=DIR writes
// what inspect printed to DIR instead, to review and commit after a deliberate change.
TEST_F(InspectTest, EveryRealHostShapeReportsExactlyItsGoldenJson) {
  const char* write_to = std::getenv("WEFT_WRITE_GOLDENS_TO");
  for (const char* shape : {"mlx5_missing_counters", "i40iw_no_pma", "mlx5_trailing_blank_lines",
                            "mlx4_counters_ext", "mlx5_ib_and_roce", "mlx5_no_pci_link"}) {
    SCOPED_TRACE(shape);
    const std::string root = weft::testing::TempPath(absl::StrCat("shape_", shape));
    ASSERT_TRUE(weft::testing::MaterializeFixture(
                    absl::StrCat("tests/fixtures/", shape, ".tree"), root).ok());
    auto json = RunCommand({"agent/weft-agent", "inspect", "--root", root, "--lldp", "off",
                            "--output", "json"},
                           absl::Seconds(10));
    ASSERT_EQ(json.exit_status, 0) << json.err;
    weft::v1::NodeSnapshot got;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &got).ok()) << json.out;
    got = HostIndependent(got);
    if (write_to != nullptr) {
      std::ofstream(absl::StrCat(write_to, "/", shape, ".inspect.json")) << FormatJson(got);
      continue;
    }
    absl::StatusOr<std::string> golden =
        ReadWholeFile(absl::StrCat("tests/fixtures/", shape, ".inspect.json"), "golden");
    ASSERT_TRUE(golden.ok()) << golden.status();
    weft::v1::NodeSnapshot want;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*golden, &want).ok());
    std::string diff;
    google::protobuf::util::MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(want, got)) << diff << "\ngot:\n" << FormatJson(got);
  }
}

// A user's capture (tools/capture-sysfs.sh) reads back as the node it was taken on:
// inspect says the same of the tarball as of the tree, tunables included.
TEST_F(InspectTest, CaptureSysfsRoundTripsAFixture) {
  for (const char* shape : {"mlx5_8nic_8gpu", "mlx5_missing_counters", "mlx5_no_pci_link"}) {
    SCOPED_TRACE(shape);
    const std::string node = weft::testing::TempPath(absl::StrCat("capture_", shape));
    ASSERT_TRUE(weft::testing::MaterializeFixture(
                    absl::StrCat("tests/fixtures/", shape, ".tree"), node).ok());
    ASSERT_TRUE(weft::testing::MaterializeFixture("agent/tunables/testdata/cc_params.tree", node)
                    .ok());
    const std::string tarball = node + ".tar.gz";
    auto capture = RunCommand({"/bin/bash", "tools/capture-sysfs.sh", "-r", node, "-o", tarball},
                              absl::Seconds(30));
    ASSERT_EQ(capture.exit_status, 0) << capture.err;
    EXPECT_THAT(capture.out, HasSubstr("capture-sysfs: wrote " + tarball));
    const std::string back = node + ".back";
    ASSERT_EQ(RunCommand({"/bin/mkdir", "-p", back}, absl::Seconds(5)).exit_status, 0);
    ASSERT_EQ(RunCommand({"/bin/tar", "-C", back, "-xzf", tarball}, absl::Seconds(30)).exit_status, 0);

    weft::v1::NodeSnapshot snapshots[2];
    for (int i = 0; i < 2; ++i) {
      auto json = RunCommand({"agent/weft-agent", "inspect", "--root", i == 0 ? node : back,
                              "--lldp", "off", "--output", "json"},
                             absl::Seconds(10));
      ASSERT_EQ(json.exit_status, 0) << json.err;
      ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &snapshots[i]).ok());
      snapshots[i] = HostIndependent(snapshots[i]);
    }
    ASSERT_GT(snapshots[0].node().nics_size(), 0);
    // The DCQCN values were read (debugfs cc_params, by PCI address, is captured too).
    ASSERT_GT(snapshots[1].tunables_size(), 0);
    if (!snapshots[1].node().nics(0).pci_address().empty()) {
      EXPECT_EQ(snapshots[1].tunables(0).dcqcn().rp_time_reset(), 300u);
    }
    std::string diff;
    google::protobuf::util::MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(snapshots[0], snapshots[1])) << diff;
  }
}

TEST_F(InspectTest, CaptureOfANodeWithoutRdmaDevicesSaysSo) {
  const std::string empty = weft::testing::TempPath("capture_empty");
  fs::create_directories(empty);
  auto capture = RunCommand({"/bin/bash", "tools/capture-sysfs.sh", "-r", empty, "-o",
                             root_ + "/x.tgz"},
                            absl::Seconds(10));
  EXPECT_EQ(capture.exit_status, 1);
  EXPECT_THAT(capture.err, HasSubstr("no RDMA device (is the driver loaded?)"));
  EXPECT_FALSE(fs::exists(root_ + "/x.tgz"));
  auto missing = RunCommand({"/bin/bash", "tools/capture-sysfs.sh", "-r", root_ + "/nope"},
                            absl::Seconds(10));
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_THAT(missing.err, HasSubstr("root " + root_ + "/nope is not a directory"));
}

TEST_F(InspectTest, MissingRootIsAClearError) {
  auto result = RunCommand({"agent/weft-agent", "inspect", "--root", root_ + "/nope"},
                           absl::Seconds(10));
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_THAT(result.err, HasSubstr("no RDMA devices"));
  auto bad = RunCommand({"agent/weft-agent", "inspect", "--output", "yaml"}, absl::Seconds(10));
  EXPECT_EQ(bad.exit_status, 2);
  EXPECT_THAT(bad.err, HasSubstr("accepted: table, json"));
}

}  // namespace
}  // namespace weft::agent
