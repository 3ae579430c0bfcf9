#include "cli/node_format.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

weft::v1::NodeStatus MakeNode(const std::string& name, const std::string& rack,
                              weft::v1::NodeState state) {
  weft::v1::NodeStatus node;
  node.mutable_info()->set_name(name);
  node.mutable_info()->set_rack(rack);
  node.set_state(state);
  node.set_reporting(true);
  for (int i = 0; i < 2; ++i) {
    auto* nic = node.mutable_info()->add_nics();
    nic->set_device("mlx5_" + std::to_string(i));
    nic->set_port(1);
    nic->set_speed_mbps(400000);
  }
  return node;
}

TEST(NodeFormatTest, StateNameDropsPrefix) {
  EXPECT_EQ(NodeStateName(weft::v1::NODE_STATE_HEALTHY), "HEALTHY");
  EXPECT_EQ(NodeStateName(weft::v1::NODE_STATE_DRAINED), "DRAINED");
}

TEST(NodeFormatTest, TableSortsByRackThenNameAndShowsRates) {
  weft::v1::ListNodesResponse response;
  *response.add_nodes() = MakeNode("n2", "rack-b", weft::v1::NODE_STATE_HEALTHY);
  auto* n1 = response.add_nodes();
  *n1 = MakeNode("n1", "rack-b", weft::v1::NODE_STATE_DOWN);
  auto* n3 = response.add_nodes();
  *n3 = MakeNode("n3", "rack-a", weft::v1::NODE_STATE_HEALTHY);
  n3->mutable_rates()->set_tx_gbps(123.456);
  n3->mutable_rates()->set_ecn_marked_per_s(1500.4);
  n3->mutable_rates()->set_pfc_pause_us_per_s(2.25);

  const std::string table = FormatNodesTable(response);
  const size_t p3 = table.find("n3"), p1 = table.find("n1"), p2 = table.find("n2");
  ASSERT_NE(p3, std::string::npos);
  EXPECT_LT(p3, p1);
  EXPECT_LT(p1, p2);
  EXPECT_THAT(table, HasSubstr("123.5"));
  EXPECT_THAT(table, HasSubstr("1500"));
  EXPECT_THAT(table, HasSubstr("2.2"));
  EXPECT_THAT(table, HasSubstr("DOWN"));
  // Header and three rows.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4);
}

TEST(NodeFormatTest, DrainedDownNodeSaysBoth) {
  weft::v1::ListNodesResponse response;
  auto* n = response.add_nodes();
  *n = MakeNode("n1", "r", weft::v1::NODE_STATE_DRAINED);
  n->set_reporting(false);
  n->set_drain_reason("bad cable");
  const std::string table = FormatNodesTable(response);
  EXPECT_THAT(table, HasSubstr("DRAINED (down)"));
  EXPECT_THAT(table, HasSubstr("bad cable"));
}

TEST(NodeFormatTest, DetailListsNicsGpusAndRoceV2Gid) {
  weft::v1::NodeStatus node = MakeNode("gpu-1", "rack-a", weft::v1::NODE_STATE_HEALTHY);
  auto* gid = node.mutable_info()->mutable_nics(0)->add_gids();
  gid->set_index(3);
  gid->set_type(weft::v1::GID_TYPE_ROCE_V2);
  auto* gpu = node.mutable_info()->add_gpus();
  gpu->set_index(0);
  gpu->set_pci_address("0000:18:00.0");
  gpu->set_closest_nic("mlx5_0");
  auto* status = node.add_nics();
  *status->mutable_nic() = node.info().nics(0);
  status->mutable_latest()->mutable_port_counters()->mutable_xmit_bytes()->set_per_second(
      25e9);  // 200 Gb/s
  status->mutable_latest()->set_port_state(4);

  const std::string detail = FormatNodeDetail(node);
  EXPECT_THAT(detail, HasSubstr("mlx5_0"));
  EXPECT_THAT(detail, HasSubstr("200.0"));
  EXPECT_THAT(detail, HasSubstr("ACTIVE"));
  EXPECT_THAT(detail, HasSubstr("0000:18:00.0"));
  EXPECT_THAT(detail, HasSubstr("400"));
  // The RoCE v2 GID index column shows 3 for mlx5_0.
  const std::string row = detail.substr(detail.find("mlx5_0"));
  EXPECT_THAT(row.substr(0, row.find('\n')), HasSubstr("  3  "));
}

TEST(NodeFormatTest, JsonKeepsProtoFieldNamesAndZeroValues) {
  weft::v1::NodeStatus node = MakeNode("gpu-1", "rack-a", weft::v1::NODE_STATE_HEALTHY);
  const std::string json = FormatJson(node);
  EXPECT_THAT(json, HasSubstr("\"speed_mbps\": \"400000\""));
  EXPECT_THAT(json, HasSubstr("\"state\": \"NODE_STATE_HEALTHY\""));
  EXPECT_THAT(json, HasSubstr("\"drain_reason\": \"\""));
  EXPECT_THAT(json, Not(HasSubstr("speedMbps")));
}

}  // namespace
}  // namespace weft
