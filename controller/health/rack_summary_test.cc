#include "controller/health/rack_summary.h"

#include "gtest/gtest.h"

namespace weft::controller {
namespace {

NodeSummary Node(const std::string& pod, const std::string& rack,
                 weft::v1::NodeState state, double tx_gbps, double ecn, double pause_us) {
  NodeSummary node;
  node.pod = pod;
  node.rack = rack;
  node.state = state;
  node.rates.tx_gbps = tx_gbps;
  node.rates.rx_gbps = tx_gbps / 2;
  node.rates.ecn_marked_per_s = ecn;
  node.rates.cnp_sent_per_s = ecn / 10;
  node.rates.pfc_pause_us_per_s = pause_us;
  return node;
}

TEST(RackSummaryTest, CountsStatesAndSumsRatesPerRackAndPod) {
  const std::vector<NodeSummary> nodes = {
      Node("pod-2", "r9", weft::v1::NODE_STATE_HEALTHY, 100, 10, 0),
      Node("pod-1", "r2", weft::v1::NODE_STATE_DEGRADED, 300, 5000, 900'000),
      Node("pod-1", "r1", weft::v1::NODE_STATE_HEALTHY, 200, 20, 100),
      Node("pod-1", "r1", weft::v1::NODE_STATE_DOWN, 0, 0, 0),
      Node("pod-1", "r2", weft::v1::NODE_STATE_DRAINED, 50, 0, 0),
      Node("pod-1", "r1", weft::v1::NODE_STATE_HEALTHY, 150, 30, 200),
  };
  const weft::v1::ListRacksResponse response = AggregateRacks(nodes, "");
  ASSERT_EQ(response.racks_size(), 3);
  const weft::v1::RackStatus& r1 = response.racks(0);
  EXPECT_EQ(r1.pod(), "pod-1");
  EXPECT_EQ(r1.rack(), "r1");
  EXPECT_EQ(r1.nodes().total(), 3u);
  EXPECT_EQ(r1.nodes().healthy(), 2u);
  EXPECT_EQ(r1.nodes().down(), 1u);
  EXPECT_EQ(r1.nodes().degraded(), 0u);
  EXPECT_DOUBLE_EQ(r1.rates().tx_gbps(), 350);
  EXPECT_DOUBLE_EQ(r1.rates().rx_gbps(), 175);
  EXPECT_DOUBLE_EQ(r1.rates().ecn_marked_per_s(), 50);
  EXPECT_DOUBLE_EQ(r1.rates().cnp_sent_per_s(), 5);
  EXPECT_DOUBLE_EQ(r1.rates().pfc_pause_us_per_s(), 300);

  const weft::v1::RackStatus& r2 = response.racks(1);
  EXPECT_EQ(r2.rack(), "r2");
  EXPECT_EQ(r2.nodes().degraded(), 1u);
  EXPECT_EQ(r2.nodes().drained(), 1u);
  EXPECT_DOUBLE_EQ(r2.rates().tx_gbps(), 350);
  EXPECT_DOUBLE_EQ(r2.rates().pfc_pause_us_per_s(), 900'000);
  EXPECT_EQ(response.racks(2).pod(), "pod-2");

  ASSERT_EQ(response.pods_size(), 2);
  const weft::v1::PodStatus& pod1 = response.pods(0);
  EXPECT_EQ(pod1.pod(), "pod-1");
  EXPECT_EQ(pod1.racks(), 2u);
  EXPECT_EQ(pod1.nodes().total(), 5u);
  EXPECT_EQ(pod1.nodes().healthy(), 2u);
  EXPECT_DOUBLE_EQ(pod1.rates().tx_gbps(), 700);
  EXPECT_DOUBLE_EQ(pod1.rates().ecn_marked_per_s(), 5050);
  EXPECT_EQ(response.pods(1).racks(), 1u);
  EXPECT_EQ(response.pods(1).nodes().total(), 1u);
}

TEST(RackSummaryTest, PodFilterAndUnplacedNodes) {
  const std::vector<NodeSummary> nodes = {
      Node("pod-2", "r9", weft::v1::NODE_STATE_HEALTHY, 100, 0, 0),
      Node("", "", weft::v1::NODE_STATE_HEALTHY, 1, 0, 0),
      Node("pod-1", "r1", weft::v1::NODE_STATE_HEALTHY, 200, 0, 0),
  };
  const weft::v1::ListRacksResponse pod2 = AggregateRacks(nodes, "pod-2");
  ASSERT_EQ(pod2.racks_size(), 1);
  EXPECT_EQ(pod2.racks(0).rack(), "r9");
  ASSERT_EQ(pod2.pods_size(), 1);

  const weft::v1::ListRacksResponse all = AggregateRacks(nodes, "");
  ASSERT_EQ(all.racks_size(), 3);
  EXPECT_EQ(all.racks(0).pod(), "");
  EXPECT_EQ(all.racks(0).rack(), "");
  EXPECT_DOUBLE_EQ(all.racks(0).rates().tx_gbps(), 1);

  EXPECT_EQ(AggregateRacks({}, "").racks_size(), 0);
}

}  // namespace
}  // namespace weft::controller
