// `weft-agent inspect` as an operator runs it: the real binary against a fixture tree
// that mirrors an mlx5 node, in table and JSON form.
#include "agent/inspect.h"

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
