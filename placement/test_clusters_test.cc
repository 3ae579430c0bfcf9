#include "placement/test_clusters.h"

#include "gtest/gtest.h"

namespace weft::placement {
namespace {

TEST(TestClustersTest, NamesNodesByRackAndCablesGpusToNics) {
  const weft::v1::ClusterSnapshot s = MakeCluster({{"a", "p1", 2, 0.5}, {"b", "p2", 1}}, 8, 4);
  ASSERT_EQ(s.nodes_size(), 3);
  EXPECT_EQ(s.nodes(0).name(), "a-01");
  EXPECT_EQ(s.nodes(1).name(), "a-02");
  EXPECT_EQ(s.nodes(2).name(), "b-01");
  EXPECT_EQ(s.nodes(2).pod(), "p2");
  EXPECT_DOUBLE_EQ(s.nodes(0).congestion(), 0.5);
  ASSERT_EQ(s.nodes(0).gpus_size(), 8);
  EXPECT_EQ(s.nodes(0).gpus(5).closest_nic(), "mlx5_2");
  EXPECT_EQ(s.nodes(0).nics(3).netdev(), "ens3np0");
}

TEST(TestClustersTest, OccupancyAndRingJob) {
  const weft::v1::Occupancy o = OccupancyOf({"a-01", "b-01"}, "j");
  ASSERT_EQ(o.entries_size(), 2);
  EXPECT_EQ(o.entries(1).node(), "b-01");
  EXPECT_EQ(o.entries(1).job_id(), "j");
  const weft::v1::PlacementRequest r = RingJob("x", 4, 100);
  EXPECT_EQ(r.node_count(), 4u);
  EXPECT_EQ(r.gradient_bytes(), 100u);
}

}  // namespace
}  // namespace weft::placement
