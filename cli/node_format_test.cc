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
  n3->mutable_rates()->set_pfc_rx_pause_share(0.225);
  n3->mutable_rates()->set_pfc_tx_pause_share(0.9);

  const std::string table = FormatNodesTable(response);
  const size_t p3 = table.find("n3"), p1 = table.find("n1"), p2 = table.find("n2");
  ASSERT_NE(p3, std::string::npos);
  EXPECT_LT(p3, p1);
  EXPECT_LT(p1, p2);
  EXPECT_THAT(table, HasSubstr("123.5"));
  EXPECT_THAT(table, HasSubstr("1500"));
  EXPECT_THAT(table, HasSubstr("PFC_RX_PAUSED  PFC_TX_PAUSED"));
  EXPECT_THAT(table, HasSubstr("22.5%          90.0%"));
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

weft::v1::Finding MakeFinding(const std::string& rule, const std::string& device, double value,
                              double threshold) {
  weft::v1::Finding f;
  f.set_rule(rule);
  f.set_device(device);
  f.set_port(1);
  f.set_value(value);
  f.set_threshold(threshold);
  f.set_detail(rule + " detail");
  f.set_since_us(int64_t{1796018400} * 1000000);
  return f;
}

// The NOTE cell of `node`'s row in the nodes table (the text after its PFC column).
std::string NoteOf(const std::string& table, const std::string& node) {
  const size_t start = table.find("\n" + node + " ");
  if (start == std::string::npos) return "<no row>";
  const std::string row = table.substr(start + 1, table.find('\n', start + 1) - start - 1);
  const size_t header_note = table.find("NOTE");
  return row.size() > header_note ? row.substr(header_note) : "";
}

TEST(NodeFormatTest, DegradedRowsNameTheirFiringRulesInBrief) {
  weft::v1::ListNodesResponse response;
  auto* sick = response.add_nodes();
  *sick = MakeNode("n1", "r", weft::v1::NODE_STATE_DEGRADED);
  *sick->add_findings() = MakeFinding("pfc_pause_storm", "mlx5_0", 0.97, 0.5);
  auto* very = response.add_nodes();
  *very = MakeNode("n2", "r", weft::v1::NODE_STATE_DEGRADED);
  *very->add_findings() = MakeFinding("link_down", "mlx5_3", 1, 4);
  *very->add_findings() = MakeFinding("link_flap", "mlx5_3", 2, 0);
  *very->add_findings() = MakeFinding("packet_seq_err", "mlx5_1", 300, 10);
  auto* recovering = response.add_nodes();
  *recovering = MakeNode("n3", "r", weft::v1::NODE_STATE_DEGRADED);
  auto* fine = response.add_nodes();
  *fine = MakeNode("n4", "r", weft::v1::NODE_STATE_HEALTHY);
  auto* auto_drained = response.add_nodes();
  *auto_drained = MakeNode("n5", "r", weft::v1::NODE_STATE_DRAINED);
  auto_drained->set_drain_reason("auto: link_down on mlx5_3/1: port state DOWN");
  auto_drained->set_drained_by(weft::v1::DRAIN_SOURCE_AUTO);
  *auto_drained->add_findings() = MakeFinding("link_down", "mlx5_3", 1, 4);

  const std::string table = FormatNodesTable(response);
  EXPECT_THAT(table, HasSubstr("DEGRADED"));
  EXPECT_EQ(NoteOf(table, "n1"), "pfc_pause_storm@mlx5_0");
  EXPECT_EQ(NoteOf(table, "n2"), "link_down@mlx5_3, link_flap@mlx5_3 +1 more");
  EXPECT_EQ(NoteOf(table, "n3"), "recovering (no rule firing)");
  EXPECT_EQ(NoteOf(table, "n4"), "");
  EXPECT_EQ(NoteOf(table, "n5"),
            "auto: link_down on mlx5_3/1: port state DOWN; link_down@mlx5_3");
  EXPECT_EQ(FindingsBrief(response.nodes(3)), "");
}

TEST(NodeFormatTest, DetailShowsFindingsWithNumbersAndWhoDrained) {
  weft::v1::NodeStatus node = MakeNode("gpu-1", "rack-a", weft::v1::NODE_STATE_DRAINED);
  node.set_health(weft::v1::NODE_STATE_DEGRADED);
  node.set_drain_reason("auto: pfc_pause_storm on mlx5_0/1");
  node.set_drained_by(weft::v1::DRAIN_SOURCE_AUTO);
  *node.add_findings() = MakeFinding("pfc_pause_storm", "mlx5_0", 0.97, 0.5);
  const std::string detail = FormatNodeDetail(node);
  EXPECT_THAT(detail, HasSubstr("Health:    DEGRADED by the health rules"));
  EXPECT_THAT(detail, HasSubstr("Drained:   auto: pfc_pause_storm on mlx5_0/1 (by auto)"));
  EXPECT_THAT(detail, HasSubstr("Findings"));
  const std::string row = detail.substr(detail.find("pfc_pause_storm  "));
  EXPECT_THAT(row.substr(0, row.find('\n')),
              HasSubstr("mlx5_0/1  0.97   0.5        2026-11-30T06:00:00.000Z  "
                        "pfc_pause_storm detail"));

  // An operator's drain names the operator's authenticated identity.
  node.set_drain_reason("optics");
  node.set_drained_by(weft::v1::DRAIN_SOURCE_OPERATOR);
  node.set_drained_who("dev-operator");
  EXPECT_THAT(FormatNodeDetail(node), HasSubstr("Drained:   optics (by operator dev-operator)"));

  // A healthy node has no findings table and no separate health line.
  const std::string healthy =
      FormatNodeDetail(MakeNode("gpu-2", "rack-a", weft::v1::NODE_STATE_HEALTHY));
  EXPECT_THAT(healthy, Not(HasSubstr("Findings")));
  EXPECT_THAT(healthy, Not(HasSubstr("Health:")));
}

TEST(NodeFormatTest, EventsTableOnePerLineWithWhoAndNumbers) {
  weft::v1::ListEventsResponse response;
  const int64_t t0 = int64_t{1796018400} * 1000000;
  auto* fired = response.add_events();
  fired->set_time_us(t0 + 1500);
  fired->set_node("gpu-a01");
  fired->set_kind(weft::v1::EVENT_KIND_RULE_FIRED);
  *fired->mutable_finding() = MakeFinding("pfc_pause_storm", "mlx5_0", 0.97, 0.5);
  fired->set_message("pfc_pause_storm on mlx5_0/1: rx pause 97.0% (threshold 50.0%)");
  auto* changed = response.add_events();
  changed->set_time_us(t0 + 2'000'000);
  changed->set_node("gpu-a01");
  changed->set_kind(weft::v1::EVENT_KIND_STATE_CHANGED);
  changed->set_from_state(weft::v1::NODE_STATE_HEALTHY);
  changed->set_to_state(weft::v1::NODE_STATE_DEGRADED);
  changed->set_message("pfc_pause_storm on mlx5_0/1: ...");
  auto* drained = response.add_events();
  drained->set_time_us(t0 + 60'000'000);
  drained->set_node("gpu-a01");
  drained->set_kind(weft::v1::EVENT_KIND_DRAINED);
  drained->set_drained_by(weft::v1::DRAIN_SOURCE_AUTO);
  drained->set_message("auto: pfc_pause_storm ...");
  auto* undrained = response.add_events();
  undrained->set_time_us(t0 + 90'000'000);
  undrained->set_node("gpu-a01");
  undrained->set_kind(weft::v1::EVENT_KIND_UNDRAINED);
  undrained->set_drained_by(weft::v1::DRAIN_SOURCE_OPERATOR);
  undrained->set_who("dev-operator");

  const std::string table = FormatEventsTable(response);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5);
  EXPECT_THAT(table, HasSubstr("2026-11-30T06:00:00.001Z  gpu-a01  fired pfc_pause_storm"));
  EXPECT_THAT(table, HasSubstr("rx pause 97.0% (threshold 50.0%)"));
  EXPECT_THAT(table, HasSubstr("HEALTHY -> DEGRADED"));
  EXPECT_THAT(table, HasSubstr("drained by auto"));
  EXPECT_THAT(table, HasSubstr("undrained by operator dev-operator"));
  EXPECT_THAT(table, Not(HasSubstr("may be missing")));

  response.set_truncated(true);
  response.set_capacity(10000);
  EXPECT_THAT(FormatEventsTable(response),
              HasSubstr("older matching events may be missing: the controller keeps the "
                        "newest 10000 events"));
}

TEST(NodeFormatTest, RacksTableShowsRacksThenPods) {
  weft::v1::ListRacksResponse response;
  auto* hot = response.add_racks();
  hot->set_pod("pod-1");
  hot->set_rack("rack-a");
  hot->mutable_nodes()->set_total(4);
  hot->mutable_nodes()->set_healthy(2);
  hot->mutable_nodes()->set_degraded(1);
  hot->mutable_nodes()->set_drained(1);
  hot->mutable_rates()->set_tx_gbps(1234.56);
  hot->mutable_rates()->set_ecn_marked_per_s(98765);
  // Every priority of every NIC paused 95% of the time is 95%, not "190%".
  hot->mutable_rates()->set_pfc_pause_us_per_s(1'900'000);
  hot->mutable_rates()->set_pfc_rx_pause_share(0.95);
  hot->mutable_rates()->set_pfc_tx_pause_share(0.95);
  auto* unplaced = response.add_racks();
  unplaced->mutable_nodes()->set_total(1);
  auto* pod = response.add_pods();
  pod->set_pod("pod-1");
  pod->set_racks(1);
  *pod->mutable_nodes() = hot->nodes();
  *pod->mutable_rates() = hot->rates();

  const std::string table = FormatRacksTable(response);
  EXPECT_THAT(table, HasSubstr("Racks\nPOD    RACK    NODES  HEALTHY  DEGRADED  DOWN  DRAINED"));
  EXPECT_THAT(table, HasSubstr("pod-1  rack-a  4      2        1         0     1        1234.6"));
  EXPECT_THAT(table, HasSubstr("98765"));
  EXPECT_THAT(table, HasSubstr("95.0%          95.0%"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr("1900000")));
  EXPECT_THAT(table, HasSubstr("\n-      -       1"));  // no pod, no rack
  EXPECT_THAT(table, HasSubstr("Pods\nPOD    RACKS  NODES"));
  EXPECT_THAT(table, HasSubstr("pod-1  1      4      2"));
}

}  // namespace
}  // namespace weft
