#include "pingmesh/traced_resolver.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pingmesh/localiser.h"

namespace weft::pingmesh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const PathResolver& resolver, const std::vector<int>& ids) {
  std::vector<std::string> names;
  for (int id : ids) names.push_back(resolver.Link(id).name);
  return names;
}

// A trace accepted and the path changed; a refused one fails the test.
bool Changed(const absl::StatusOr<bool>& added) {
  EXPECT_TRUE(added.ok()) << added.status();
  return added.ok() && *added;
}

ProbeKey Key(const std::string& src_node, const std::string& dst_node, uint16_t port = 49152) {
  ProbeKey key;
  key.src_node = src_node;
  key.src_nic = "mlx5_0";
  key.dst_node = dst_node;
  key.dst_nic = "mlx5_0";
  key.udp_src_port = port;
  return key;
}

// The netns fabric's addressing (tests/netns_fabric.h): spine k answers tor j from
// 10.(100+k).j.1, tor j answers its hosts from 10.j.i.1 and the spines from 10.(100+k).j.2.
class TracedResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    resolver_.SetNicTor("a1", "mlx5_0", "rack-a/tor");
    resolver_.SetNicTor("a2", "mlx5_0", "rack-a/tor");
    resolver_.SetNicTor("b1", "mlx5_0", "rack-b/tor");
    ASSERT_TRUE(resolver_
                    .SetSwitches({{"spine-0", {"10.100.0.1", "10.100.1.1"}},
                                  {"spine-1", {"10.101.0.1", "10.101.1.1"}}})
                    .ok());
  }
  TracedResolver resolver_;
};

TEST_F(TracedResolverTest, UntracedStreamCrossesTheBundles) {
  absl::StatusOr<ProbePath> path = resolver_.Resolve(Key("a1", "b1"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_THAT(Names(resolver_, path->forward),
              ElementsAre("a1/mlx5_0->rack-a/tor", "rack-a/tor->spines", "spines->rack-b/tor",
                          "rack-b/tor->b1/mlx5_0"));
}

TEST_F(TracedResolverTest, TracedStreamNamesItsSpineBothAddressesOneSwitch) {
  ASSERT_TRUE(Changed(
      resolver_.AddTrace({Key("a1", "b1"), {"10.0.1.1", "10.100.0.1", "10.100.1.2"}, true})));
  // b1's stream back answers from spine-0's other port: still spine-0.
  ASSERT_TRUE(Changed(
      resolver_.AddTrace({Key("b1", "a1"), {"10.1.1.1", "10.100.1.1", "10.100.0.2"}, true})));
  absl::StatusOr<ProbePath> path = resolver_.Resolve(Key("a1", "b1"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_THAT(Names(resolver_, path->forward),
              ElementsAre("a1/mlx5_0->rack-a/tor", "rack-a/tor->spine-0", "spine-0->rack-b/tor",
                          "rack-b/tor->b1/mlx5_0"));
  EXPECT_TRUE(resolver_.Link(path->forward[1]).from_switch);
  EXPECT_TRUE(resolver_.Link(path->forward[1]).to_switch);
  // The answer's path is not traced: the bundles.
  EXPECT_THAT(Names(resolver_, path->back),
              ElementsAre("b1/mlx5_0->rack-b/tor", "rack-b/tor->spines", "spines->rack-a/tor",
                          "rack-a/tor->a1/mlx5_0"));
  path = resolver_.Resolve(Key("b1", "a1"));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(resolver_.Link(path->forward[2]).name, "spine-0->rack-a/tor");
  // ToR addresses are learnt from the first and last hops.
  EXPECT_EQ(resolver_.SwitchOf("10.0.1.1"), "rack-a/tor");
  EXPECT_EQ(resolver_.SwitchOf("10.100.1.2"), "rack-b/tor");
  EXPECT_EQ(resolver_.SwitchOf("10.9.9.9"), "10.9.9.9");
  EXPECT_EQ(resolver_.traced_streams(), 2u);
}

TEST_F(TracedResolverTest, OnlyACompleteTraceChangesThePath) {
  const ProbeKey key = Key("a1", "b1");
  ASSERT_TRUE(Changed(resolver_.AddTrace({key, {"10.0.1.1", "10.101.0.1", "10.101.1.2"}, true})));
  // The same trace again: nothing to re-resolve.
  EXPECT_FALSE(Changed(resolver_.AddTrace({key, {"10.0.1.1", "10.101.0.1", "10.101.1.2"}, true})));
  // Cut short (the fault under study drops it) or with a silent router: ignored.
  EXPECT_FALSE(Changed(resolver_.AddTrace({key, {"10.0.1.1", "", ""}, false})));
  EXPECT_FALSE(Changed(resolver_.AddTrace({key, {"10.0.1.1", "", "10.100.1.2"}, true})));
  absl::StatusOr<ProbePath> path = resolver_.Resolve(key);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(resolver_.Link(path->forward[1]).name, "rack-a/tor->spine-1");
  // An unknown router is named by its address.
  EXPECT_TRUE(Changed(resolver_.AddTrace({key, {"10.0.1.1", "192.0.2.7", "10.100.1.2"}, true})));
  path = resolver_.Resolve(key);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(resolver_.Link(path->forward[1]).name, "rack-a/tor->192.0.2.7");
  // A trace that contradicts the ToRs (one hop between racks) leaves the bundles.
  const ProbeKey other = Key("a1", "b1", 50000);
  ASSERT_TRUE(Changed(resolver_.AddTrace({other, {"10.0.1.1"}, true})));
  path = resolver_.Resolve(other);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(resolver_.Link(path->forward[1]).name, "rack-a/tor->spines");
}

TEST_F(TracedResolverTest, SameTorTraceIsTheToRAlone) {
  ASSERT_TRUE(Changed(resolver_.AddTrace({Key("a1", "a2"), {"10.0.1.1"}, true})));
  absl::StatusOr<ProbePath> path = resolver_.Resolve(Key("a1", "a2"));
  ASSERT_TRUE(path.ok());
  EXPECT_THAT(Names(resolver_, path->forward),
              ElementsAre("a1/mlx5_0->rack-a/tor", "rack-a/tor->a2/mlx5_0"));
}

TEST_F(TracedResolverTest, GarbageIsRefusedWithTheReason) {
  absl::StatusOr<bool> bad = resolver_.AddTrace({Key("a1", "b1"), {"10.0.1.1", "spine-0"}, true});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("hop 2 'spine-0' is not a numeric"));
  EXPECT_FALSE(resolver_.AddTrace({Key("a1", "a1"), {"10.0.1.1"}, true}).ok());
  EXPECT_FALSE(resolver_.AddTrace({Key("a1", "b1", 0), {"10.0.1.1"}, true}).ok());
  EXPECT_FALSE(resolver_.AddTrace({Key("", "b1"), {"10.0.1.1"}, true}).ok());
  EXPECT_FALSE(
      resolver_.AddTrace({Key("a1", "b1"), std::vector<std::string>(65, "10.0.1.1"), true}).ok());
  EXPECT_EQ(resolver_.traced_streams(), 0u);
  // Switches: an address twice, or not an address.
  absl::Status twice = resolver_.SetSwitches({{"s0", {"10.1.1.1"}}, {"s1", {"10.1.1.1"}}});
  EXPECT_THAT(twice.message(), HasSubstr("claimed by both s0 and s1"));
  EXPECT_FALSE(resolver_.SetSwitches({{"s0", {"ten"}}}).ok());
  EXPECT_FALSE(resolver_.SetSwitches({{"", {}}}).ok());
  EXPECT_EQ(resolver_.SwitchOf("10.100.0.1"), "spine-0");  // unchanged on error
}

// Streams whose traces arrive after the localiser cached their bundle paths move to the
// traced links once resolved again, keeping their history; a loss on one spine is then
// named on that spine, not on the ToRs' bundles.
TEST_F(TracedResolverTest, LocaliserResolvesAgainAfterATrace) {
  resolver_.SetNicTor("b2", "mlx5_0", "rack-b/tor");
  LocaliserOptions options;
  Localiser localiser(&resolver_, options);
  struct Stream {
    ProbeKey key;
    int spine;
  };
  // Rack a to rack b over both spines, and back over spine-1 (clean).
  std::vector<Stream> streams;
  for (const char* a : {"a1", "a2"}) {
    for (const char* b : {"b1", "b2"}) {
      streams.push_back({Key(a, b, 49152), 0});
      streams.push_back({Key(a, b, 49153), 1});
      streams.push_back({Key(b, a, 49152), 1});
      streams.push_back({Key(b, a, 49153), 1});
    }
  }
  absl::Time now = absl::UnixEpoch();
  auto add_window = [&](bool lossy) {
    for (const Stream& s : streams) {
      ProbeWindow window;
      window.key = s.key;
      window.sent = 100;
      window.lost = lossy && s.spine == 0 ? 5 : 0;
      ASSERT_TRUE(localiser.Add(window).ok());
    }
    now += options.window;
  };
  add_window(false);
  localiser.EndWindow(now);
  for (const Stream& s : streams) {
    const std::string spine = absl::StrCat("10.", 100 + s.spine, ".");
    const bool from_a = s.key.src_node[0] == 'a';
    ASSERT_TRUE(Changed(resolver_.AddTrace(
        {s.key,
         {from_a ? "10.0.1.1" : "10.1.1.1", spine + (from_a ? "0.1" : "1.1"),
          spine + (from_a ? "1.2" : "0.2")},
         true})));
    ASSERT_TRUE(localiser.ResolveAgain(s.key).ok());
  }
  EXPECT_EQ(localiser.ResolveAgain(Key("a1", "a2")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(localiser.streams(), streams.size());
  bool named = false;
  for (int i = 0; i < 20 && !named; ++i) {
    add_window(true);
    for (const Verdict& v : localiser.EndWindow(now).raised) {
      EXPECT_EQ(v.kind, ComponentKind::kLink) << v.component;
      if (v.component.find("rack-a/tor->spine-0") == std::string::npos) continue;
      named = true;
      EXPECT_EQ(v.component.find("spines"), std::string::npos) << v.component;
    }
  }
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace weft::pingmesh
