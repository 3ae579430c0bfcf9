// `weftctl topology check` at the library level: a design file on disk, an observed
// snapshot as GetTopology would return it, and the rendered report and exit code.
#include "cli/topology_check.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

std::string WriteFile(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

constexpr char kDesign[] = R"(
nodes:
  - {name: gpu-a01, rack: a}
  - {name: gpu-a02, rack: a}
racks:
  - {name: a, rail_switches: [leaf-a-r0, leaf-a-r1]}
)";

weft::v1::ClusterSnapshot Observed(const std::string& text) {
  weft::v1::ClusterSnapshot snapshot;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &snapshot));
  return snapshot;
}

constexpr char kCleanNodes[] = R"pb(
  nodes {
    name: "gpu-a01" rack: "a"
    nics { device: "mlx5_0" lldp_switch: "leaf-a-r0" lldp_port: "swp1" }
    nics { device: "mlx5_1" lldp_switch: "leaf-a-r1" lldp_port: "swp1" }
  }
  nodes {
    name: "gpu-a02" rack: "a"
    nics { device: "mlx5_0" lldp_switch: "leaf-a-r0" lldp_port: "swp2" }
    nics { device: "mlx5_1" lldp_switch: "leaf-a-r1" lldp_port: "swp2" }
  }
)pb";

TEST(TopologyCheckTest, CleanCablingExitsZero) {
  absl::StatusOr<TopologyCheckResult> result =
      RunTopologyCheck(WriteFile("clean.yaml", kDesign), Observed(kCleanNodes), false);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->output, "cabling matches the design (2 nodes checked)\n");
}

TEST(TopologyCheckTest, FindingsAsTableExitOne) {
  weft::v1::ClusterSnapshot observed = Observed(kCleanNodes);
  observed.mutable_nodes(0)->mutable_nics(0)->set_lldp_switch("leaf-a-r1");
  observed.mutable_nodes(1)->mutable_nics(1)->clear_lldp_switch();
  observed.mutable_nodes(1)->mutable_nics(1)->clear_lldp_port();
  weft::v1::SnapshotNode* stray = observed.add_nodes();
  stray->set_name("gpu-z09");
  stray->set_rack("tor-z");
  absl::StatusOr<TopologyCheckResult> result =
      RunTopologyCheck(WriteFile("findings.yaml", kDesign), observed, false);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_EQ(result->output,
            "PROBLEM        NODE     NIC     EXPECTED   OBSERVED             ACTION\n"
            "miswired       gpu-a01  mlx5_0  leaf-a-r0  leaf-a-r1 port swp1  move the cable of "
            "mlx5_0 from leaf-a-r1 port swp1 to leaf-a-r0\n"
            "missing-link   gpu-a02  mlx5_1  leaf-a-r1  -                    no LLDP neighbor on "
            "mlx5_1: check its cable to leaf-a-r1 and that lldpd runs on the node\n"
            "not-in-design  gpu-z09  -       -          tor-z                add the node to the "
            "design's nodes (it is in rack tor-z)\n"
            "3 findings in 3 nodes\n");
}

TEST(TopologyCheckTest, JsonOutputIsTheReport) {
  weft::v1::ClusterSnapshot observed = Observed(kCleanNodes);
  observed.mutable_nodes(1)->mutable_nics(0)->set_lldp_switch("leaf-b-r0");
  observed.mutable_nodes(1)->mutable_nics(1)->set_lldp_switch("leaf-b-r1");
  const std::string design =
      std::string(kDesign) + "  - {name: b, rail_switches: [leaf-b-r0, leaf-b-r1]}\n";
  absl::StatusOr<TopologyCheckResult> result =
      RunTopologyCheck(WriteFile("json.yaml", design), observed, true);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 1);
  EXPECT_THAT(result->output, HasSubstr("\"problem\": \"CABLING_PROBLEM_WRONG_RACK\""));
  EXPECT_THAT(result->output, HasSubstr("\"node\": \"gpu-a02\""));
  EXPECT_THAT(result->output, HasSubstr("\"expected\": \"a\""));
  EXPECT_THAT(result->output, HasSubstr("\"observed\": \"b\""));
  EXPECT_THAT(result->output, HasSubstr("\"nic_index\": -1"));
}

TEST(TopologyCheckTest, BadDesignNamesTheFile) {
  const std::string path = WriteFile(
      "bad.yaml", "racks:\n  - {name: a, tor: t1}\n  - {name: a, tor: t2}\n");
  absl::StatusOr<TopologyCheckResult> result =
      RunTopologyCheck(path, weft::v1::ClusterSnapshot(), false);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), path + ": design: rack a is listed twice in racks");

  const std::string typo = WriteFile("typo.yaml", "racks:\n  - {name: a, rail_switch: [x]}\n");
  result = RunTopologyCheck(typo, weft::v1::ClusterSnapshot(), false);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("rail_switch"));
}

TEST(TopologyCheckTest, OfflineSnapshotFileKeepsLldpAndRacklessNodes) {
  const std::string path = WriteFile("observed.yaml", R"(
nodes:
  - name: gpu-a01
    nics: [{device: mlx5_0, lldp_switch: leaf-a-r0}, {device: mlx5_1, lldp_switch: leaf-a-r1}]
)");
  absl::StatusOr<weft::v1::ClusterSnapshot> observed = LoadObservedSnapshot(path);
  ASSERT_TRUE(observed.ok()) << observed.status();
  ASSERT_EQ(observed->nodes_size(), 1);
  EXPECT_EQ(observed->nodes(0).nics(1).lldp_switch(), "leaf-a-r1");
  absl::StatusOr<TopologyCheckResult> result =
      RunTopologyCheck(WriteFile("offline.yaml", kDesign), *observed, false);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
}

}  // namespace
}  // namespace weft
