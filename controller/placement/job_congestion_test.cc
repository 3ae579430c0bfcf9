#include "controller/placement/job_congestion.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

weft::v1::NodeStatus Node(const std::string &name, weft::v1::NodeState state) {
  weft::v1::NodeStatus node;
  node.mutable_info()->set_name(name);
  node.set_state(state);
  node.set_reporting(state != weft::v1::NODE_STATE_DOWN);
  return node;
}

weft::v1::PlacementResponse Reservation(std::initializer_list<const char *> ring) {
  weft::v1::PlacementResponse reservation;
  reservation.set_reservation_id("r-1");
  for (const char *node : ring) reservation.add_ring_order(node);
  return reservation;
}

TEST(JobCongestionTest, SumsRatesAndKeepsTheLargestPauseShareOfTheJobsNodesOnly) {
  std::vector<weft::v1::NodeStatus> nodes = {Node("a", weft::v1::NODE_STATE_HEALTHY),
                                             Node("b", weft::v1::NODE_STATE_HEALTHY),
                                             Node("outsider", weft::v1::NODE_STATE_HEALTHY)};
  nodes[0].mutable_rates()->set_ecn_marked_per_s(100);
  nodes[0].mutable_rates()->set_cnp_sent_per_s(10);
  nodes[0].mutable_rates()->set_retransmissions_per_s(1);
  nodes[0].mutable_rates()->set_pfc_rx_pause_share(0.05);
  nodes[1].mutable_rates()->set_ecn_marked_per_s(300);
  nodes[1].mutable_rates()->set_cnp_sent_per_s(30);
  nodes[1].mutable_rates()->set_retransmissions_per_s(2);
  nodes[1].mutable_rates()->set_pfc_tx_pause_share(0.2);
  nodes[2].mutable_rates()->set_ecn_marked_per_s(1e6);
  nodes[2].mutable_rates()->set_pfc_rx_pause_share(0.9);

  const weft::v1::JobCongestion congestion =
      JobCongestionOf(Reservation({"a", "b"}), IndexNodesByName(nodes));
  EXPECT_DOUBLE_EQ(congestion.ecn_marked_per_s(), 400);
  EXPECT_DOUBLE_EQ(congestion.cnp_sent_per_s(), 40);
  EXPECT_DOUBLE_EQ(congestion.retransmits_per_s(), 3);
  EXPECT_DOUBLE_EQ(congestion.pfc_pause_share(), 0.2);
  EXPECT_THAT(congestion.findings(), IsEmpty());
}

TEST(JobCongestionTest, FindingsNameEachUnhealthyNodeAndWhyInRingOrder) {
  std::vector<weft::v1::NodeStatus> nodes = {
      Node("gpu-b03", weft::v1::NODE_STATE_DEGRADED), Node("gpu-b04", weft::v1::NODE_STATE_DRAINED),
      Node("gpu-b05", weft::v1::NODE_STATE_DOWN), Node("gpu-b06", weft::v1::NODE_STATE_HEALTHY)};
  nodes[0].add_findings()->set_rule("pfc_pause_storm");
  nodes[0].add_findings()->set_rule("pfc_pause_storm");  // a second NIC, same rule
  nodes[0].add_findings()->set_rule("ecn_mark_ratio");
  nodes[1].set_drain_reason("bad optic");

  const weft::v1::JobCongestion congestion =
      JobCongestionOf(Reservation({"gpu-b06", "gpu-b05", "gpu-b04", "gpu-b03", "gpu-b09"}),
                      IndexNodesByName(nodes));
  EXPECT_THAT(congestion.findings(),
              ElementsAre("gpu-b05: DOWN (not reporting)", "gpu-b04: DRAINED (bad optic)",
                          "gpu-b03: DEGRADED (pfc_pause_storm, ecn_mark_ratio)",
                          "gpu-b09: not registered"));
}

}  // namespace
}  // namespace weft::controller
