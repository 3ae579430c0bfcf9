#include "placement/exhaustive_search.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"

namespace weft::placement {
namespace {

using weft::v1::PlacementRequest;

Topology Build(const weft::v1::ClusterSnapshot& s) { return *Topology::Build(s); }

PlacementRequest OneGpuRing(int nodes, uint64_t bytes) {
  PlacementRequest r = RingJob("j", nodes, bytes);
  r.set_gpus_per_node(1);
  return r;
}

TEST(ExhaustiveSearchTest, RingOverTwoRacksByHand) {
  // 5 nodes over racks of 3 and 3: two racks, the ring crosses twice; 5 ranks so each
  // edge carries 2 * 4 / 5 * 500 = 800 bytes.
  const Topology topo = Build(MakeCluster({{"a", "p1", 3}, {"b", "p1", 3}}, 1, 1));
  absl::StatusOr<Optimum> best = ExhaustiveOptimum(topo, {}, OneGpuRing(5, 500));
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->racks, 2);
  EXPECT_EQ(best->pods, 1);
  EXPECT_EQ(best->cross_rack_bytes, 1600u);
  EXPECT_EQ(best->cross_pod_bytes, 0u);
}

TEST(ExhaustiveSearchTest, PrefersOneRackAndOnePod) {
  const Topology topo =
      Build(MakeCluster({{"a", "p1", 2}, {"b", "p2", 2}, {"c", "p2", 3}}, 1, 1));
  absl::StatusOr<Optimum> best = ExhaustiveOptimum(topo, {}, OneGpuRing(3, 100));
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->racks, 1);
  EXPECT_EQ(best->cross_rack_bytes, 0u);
  best = ExhaustiveOptimum(topo, {}, OneGpuRing(4, 100));
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->racks, 2);
  EXPECT_EQ(best->pods, 1);  // b + c, not a + c
}

TEST(ExhaustiveSearchTest, AllToAllFindsTheUnevenSplit) {
  const Topology topo = Build(MakeCluster({{"a", "p1", 5}, {"b", "p1", 4}}, 1, 1));
  PlacementRequest r = OneGpuRing(8, 0);
  r.set_pattern(weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL);
  r.set_alltoall_bytes(800);
  absl::StatusOr<Optimum> best = ExhaustiveOptimum(topo, {}, r);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->cross_rack_bytes, 3000u);  // 5 + 3: 30 ordered pairs of 100 bytes
}

TEST(ExhaustiveSearchTest, HonoursEligibilityAndConstraints) {
  weft::v1::ClusterSnapshot s = MakeCluster({{"a", "p1", 2}, {"b", "p1", 2}}, 1, 1);
  MutableNode(&s, "a-01")->set_drained(true);
  const Topology topo = Build(s);
  PlacementRequest r = OneGpuRing(2, 100);
  absl::StatusOr<Optimum> best = ExhaustiveOptimum(topo, OccupancyOf({"b-01"}), r);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->racks, 2);
  r.mutable_constraints()->set_max_racks(1);
  EXPECT_EQ(ExhaustiveOptimum(topo, OccupancyOf({"b-01"}), r).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace weft::placement
