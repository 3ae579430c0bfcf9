// `weft-agent inspect` as an operator runs it: the real binary against a fixture tree
// that mirrors an mlx5 node, in table and JSON form.
#include "agent/inspect.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;
using weft::testing::RunCommand;

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
  // mlx5_1 lacks the congestion group: "-" and a warning saying so.
  EXPECT_THAT(out, HasSubstr("warning mlx5_1: no congestion counters in hw_counters/"));
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
