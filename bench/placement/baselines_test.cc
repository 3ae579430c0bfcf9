#include "bench/placement/baselines.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "placement/test_clusters.h"
#include "placement/topology.h"

namespace weft::bench {
namespace {

using placement::NodeId;

std::vector<std::string> Names(const placement::Topology& topo, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId id : ids) out.push_back(topo.node(id).name);
  return out;
}

class BaselinesTest : public ::testing::Test {
 protected:
  BaselinesTest()
      : topo_(*placement::Topology::Build(placement::MakeCluster(
            {{"a", "p1", 4}, {"b", "p1", 3}, {"c", "p2", 2}, {"d", "p2", 4}}))),
        taken_(topo_.nodes().size(), 0) {
    taken_[*topo_.FindNode("a-01")] = 1;  // a has 3 free
  }
  placement::Topology topo_;
  std::vector<char> taken_;
  std::mt19937_64 rng_{1};
};

TEST_F(BaselinesTest, FirstFitTakesHostnameOrder) {
  EXPECT_EQ(Names(topo_, PlaceBaseline(Baseline::kFirstFit, topo_, taken_, 4, rng_)),
            (std::vector<std::string>{"a-02", "a-03", "a-04", "b-01"}));
}

TEST_F(BaselinesTest, TreeBestFitPicksTheSmallestFittingRack) {
  EXPECT_EQ(Names(topo_, PlaceBaseline(Baseline::kTreeBestFit, topo_, taken_, 2, rng_)),
            (std::vector<std::string>{"c-01", "c-02"}));
  EXPECT_EQ(Names(topo_, PlaceBaseline(Baseline::kTreeBestFit, topo_, taken_, 3, rng_)),
            (std::vector<std::string>{"a-02", "a-03", "a-04"}));
}

TEST_F(BaselinesTest, TreeBestFitGoesUpToTheSmallestFittingPod) {
  // 5 nodes: no rack fits; pod p1 has 6 free, p2 has 6: the first such, most free racks
  // first (a 3, then b).
  EXPECT_EQ(Names(topo_, PlaceBaseline(Baseline::kTreeBestFit, topo_, taken_, 5, rng_)),
            (std::vector<std::string>{"a-02", "a-03", "a-04", "b-01", "b-02"}));
  // 7 nodes: no pod fits, whole cluster: d (4) then a (3).
  EXPECT_EQ(Names(topo_, PlaceBaseline(Baseline::kTreeBestFit, topo_, taken_, 7, rng_)),
            (std::vector<std::string>{"a-02", "a-03", "a-04", "d-01", "d-02", "d-03", "d-04"}));
}

TEST_F(BaselinesTest, RandomIsAFreeSubsetInHostnameOrder) {
  const std::vector<NodeId> ids = PlaceBaseline(Baseline::kRandom, topo_, taken_, 6, rng_);
  ASSERT_EQ(ids.size(), 6u);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_FALSE(taken_[ids[i]]);
    if (i > 0) {
      EXPECT_LT(topo_.node(ids[i - 1]).name, topo_.node(ids[i]).name);
    }
  }
}

TEST_F(BaselinesTest, NotEnoughFreeNodes) {
  for (Baseline b : {Baseline::kFirstFit, Baseline::kTreeBestFit, Baseline::kRandom}) {
    EXPECT_TRUE(PlaceBaseline(b, topo_, taken_, 13, rng_).empty()) << BaselineName(b);
  }
}

}  // namespace
}  // namespace weft::bench
