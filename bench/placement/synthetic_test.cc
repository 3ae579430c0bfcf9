#include "bench/placement/synthetic.h"

#include <random>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "placement/topology.h"

namespace weft::bench {
namespace {

TEST(SyntheticTest, ClusterShapeAndNames) {
  std::mt19937_64 rng(1);
  const auto snapshot = MakeSyntheticCluster({256, 16, 4}, rng);
  ASSERT_EQ(snapshot.nodes_size(), 256);
  EXPECT_EQ(snapshot.nodes(0).name(), "p00-r000-n00");
  EXPECT_EQ(snapshot.nodes(255).name(), "p03-r015-n15");
  const auto topo = placement::Topology::Build(snapshot);
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->racks().size(), 16u);
  EXPECT_EQ(topo->pods().size(), 4u);
  EXPECT_EQ(topo->UniformGpuCount(), 8);
  for (int i = 1; i < snapshot.nodes_size(); ++i) {
    EXPECT_LT(snapshot.nodes(i - 1).name(), snapshot.nodes(i).name());  // hostname order
  }
}

TEST(SyntheticTest, FragmentFillsThenReleases) {
  std::mt19937_64 rng(2);
  const auto topo = *placement::Topology::Build(MakeSyntheticCluster({1024, 32, 8}, rng));
  ClusterState state{std::vector<char>(1024, 0), 0};
  Fragment(topo, 0.7, 0.4, rng, &state);
  // About 70% taken, then ~40% of the jobs end: roughly 42% left, spread over racks.
  EXPECT_GT(state.taken_count, 0.3 * 1024);
  EXPECT_LT(state.taken_count, 0.55 * 1024);
  int partly_free_racks = 0;
  for (const auto& rack : topo.racks()) {
    int taken = 0;
    for (placement::NodeId id : rack.nodes) taken += state.taken[id];
    partly_free_racks += taken > 0 && taken < static_cast<int>(rack.nodes.size());
  }
  EXPECT_GT(partly_free_racks, 16);
  EXPECT_EQ(state.ToOccupancy(topo).entries_size(), state.taken_count);
}

TEST(SyntheticTest, JobStreamMixesKindsAndSizes) {
  std::mt19937_64 rng(3);
  std::set<std::string> kinds;
  std::set<uint32_t> sizes;
  for (int i = 0; i < 500; ++i) {
    const StreamJob job = RandomJob(4096, i, rng);
    kinds.insert(job.kind);
    sizes.insert(job.request.node_count());
    EXPECT_LE(job.request.node_count(), 512u);
    EXPECT_GE(job.lifetime, 5);
    if (job.kind == "3d") {
      EXPECT_GE(job.request.node_count(), 4u);
    }
  }
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_GE(sizes.size(), 7u);
}

}  // namespace
}  // namespace weft::bench
