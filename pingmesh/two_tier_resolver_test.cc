#include "pingmesh/two_tier_resolver.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::pingmesh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const TwoTierResolver& resolver, const std::vector<int>& ids) {
  std::vector<std::string> names;
  for (int id : ids) names.push_back(resolver.Link(id).name);
  return names;
}

ProbeKey Key(const std::string& src_node, const std::string& dst_node) {
  ProbeKey key;
  key.src_node = src_node;
  key.src_nic = "mlx5_0";
  key.dst_node = dst_node;
  key.dst_nic = "mlx5_0";
  return key;
}

TEST(TwoTierResolverTest, SameTorCrossesBothCablesEachWay) {
  TwoTierResolver resolver;
  resolver.SetNicTor("a1", "mlx5_0", "tor-a");
  resolver.SetNicTor("a2", "mlx5_0", "tor-a");
  absl::StatusOr<ProbePath> path = resolver.Resolve(Key("a1", "a2"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_THAT(Names(resolver, path->forward), ElementsAre("a1/mlx5_0->tor-a", "tor-a->a2/mlx5_0"));
  EXPECT_THAT(Names(resolver, path->back), ElementsAre("a2/mlx5_0->tor-a", "tor-a->a1/mlx5_0"));
  EXPECT_TRUE(resolver.Link(path->forward[0]).to_switch);
  EXPECT_FALSE(resolver.Link(path->forward[0]).from_switch);
}

TEST(TwoTierResolverTest, AcrossTorsCrossesTheUplinkBundlesAndSharesLinkIds) {
  TwoTierResolver resolver;
  resolver.SetNicTor("a1", "mlx5_0", "tor-a");
  resolver.SetNicTor("b1", "mlx5_0", "tor-b");
  resolver.SetNicTor("b2", "mlx5_0", "tor-b");
  absl::StatusOr<ProbePath> ab = resolver.Resolve(Key("a1", "b1"));
  ASSERT_TRUE(ab.ok()) << ab.status();
  EXPECT_THAT(Names(resolver, ab->forward),
              ElementsAre("a1/mlx5_0->tor-a", "tor-a->spines", "spines->tor-b", "tor-b->b1/mlx5_0"));
  EXPECT_THAT(Names(resolver, ab->back),
              ElementsAre("b1/mlx5_0->tor-b", "tor-b->spines", "spines->tor-a", "tor-a->a1/mlx5_0"));
  absl::StatusOr<ProbePath> ab2 = resolver.Resolve(Key("a1", "b2"));
  ASSERT_TRUE(ab2.ok());
  // The same uplink bundle is the same link for the localiser's votes.
  EXPECT_EQ(ab->forward[1], ab2->forward[1]);
  EXPECT_NE(ab->forward[3], ab2->forward[3]);
}

TEST(TwoTierResolverTest, UnknownNicAndSelfStreamAreRefusedByName) {
  TwoTierResolver resolver;
  resolver.SetNicTor("a1", "mlx5_0", "tor-a");
  absl::StatusOr<ProbePath> unknown = resolver.Resolve(Key("a1", "zz"));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("zz/mlx5_0"));
  absl::StatusOr<ProbePath> self = resolver.Resolve(Key("a1", "a1"));
  EXPECT_EQ(self.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::pingmesh
