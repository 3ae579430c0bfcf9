#include "cli/prometheus_command.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

weft::v1::NodeStatus Node(const std::string& name, const std::string& rack,
                          const std::string& metrics_address) {
  weft::v1::NodeStatus status;
  status.mutable_info()->set_name(name);
  status.mutable_info()->set_rack(rack);
  status.mutable_info()->set_pod("pod-1");
  status.mutable_info()->set_metrics_address(metrics_address);
  return status;
}

std::string ReadFile(const std::string& path) {
  return ReadWholeFile(path).value_or("");
}

std::string TempDir() { return std::getenv("TEST_TMPDIR"); }

TEST(ScrapeAddressTest, KeepsConcreteHostsAndNamesWildcards) {
  EXPECT_EQ(ScrapeAddress(Node("gpu-a01", "r", "10.1.0.5:7411").info()), "10.1.0.5:7411");
  EXPECT_EQ(ScrapeAddress(Node("gpu-a01", "r", "[fd00::5]:7411").info()), "[fd00::5]:7411");
  EXPECT_EQ(ScrapeAddress(Node("gpu-a01", "r", "0.0.0.0:7411").info()), "gpu-a01:7411");
  EXPECT_EQ(ScrapeAddress(Node("gpu-a01", "r", "[::]:7411").info()), "gpu-a01:7411");
  EXPECT_EQ(ScrapeAddress(Node("gpu-a01", "r", ":7411").info()), "gpu-a01:7411");
  EXPECT_EQ(ScrapeAddress(Node("gpu-a01", "r", "").info()), "");
}

TEST(FormatFileSdTargetsTest, OneLabelledGroupPerNodeSortedSkippingNodesWithoutMetrics) {
  weft::v1::ListNodesResponse nodes;
  *nodes.add_nodes() = Node("gpu-b01", "rack-b", "127.0.0.1:9102");
  *nodes.add_nodes() = Node("gpu-a02", "rack-a", "");
  *nodes.add_nodes() = Node("gpu-a01", "rack-a", "0.0.0.0:9101");
  std::vector<std::string> skipped;
  const std::string json = FormatFileSdTargets(nodes, &skipped);
  EXPECT_THAT(skipped, ElementsAre("gpu-a02"));

  google::protobuf::ListValue groups;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &groups).ok()) << json;
  ASSERT_EQ(groups.values_size(), 2) << json;
  const auto& first = groups.values(0).struct_value().fields();
  EXPECT_EQ(first.at("targets").list_value().values(0).string_value(), "gpu-a01:9101");
  EXPECT_EQ(first.at("labels").struct_value().fields().at("node").string_value(), "gpu-a01");
  EXPECT_EQ(first.at("labels").struct_value().fields().at("rack").string_value(), "rack-a");
  EXPECT_EQ(first.at("labels").struct_value().fields().at("pod").string_value(), "pod-1");
  const auto& second = groups.values(1).struct_value().fields();
  EXPECT_EQ(second.at("targets").list_value().values(0).string_value(), "127.0.0.1:9102");
  EXPECT_EQ(second.at("labels").struct_value().fields().at("rack").string_value(), "rack-b");
}

TEST(FormatFileSdTargetsTest, NoNodesIsAnEmptyList) {
  EXPECT_EQ(FormatFileSdTargets(weft::v1::ListNodesResponse(), nullptr), "[]\n");
}

TEST(WriteFileAtomicallyTest, ReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = TempDir() + "/targets.json";
  ASSERT_TRUE(WriteFileAtomically(path, "[old]").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "[new]").ok());
  EXPECT_EQ(ReadFile(path), "[new]");
  struct stat st;
  EXPECT_NE(stat(absl::StrCat(path, ".tmp.", getpid()).c_str(), &st), 0);
}

TEST(WriteFileAtomicallyTest, FailureNamesThePathAndKeepsTheOldFile) {
  const std::string dir = TempDir() + "/readonly";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string path = dir + "/targets.json";
  ASSERT_TRUE(WriteFileAtomically(path, "[old]").ok());
  // A directory where the file should go: the rename fails after the write.
  const std::string blocked = dir + "/blocked";
  ASSERT_EQ(mkdir(blocked.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((blocked + "/x").c_str(), 0755), 0);
  absl::Status status = WriteFileAtomically(blocked, "[new]");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(blocked));
  struct stat st;
  EXPECT_NE(stat(absl::StrCat(blocked, ".tmp.", getpid()).c_str(), &st), 0)
      << "temporary left behind";
  status = WriteFileAtomically(dir + "/missing/targets.json", "[new]");
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("missing/targets.json"));
  EXPECT_EQ(ReadFile(path), "[old]");
}

}  // namespace
}  // namespace weft
