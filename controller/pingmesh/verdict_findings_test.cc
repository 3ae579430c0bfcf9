#include "controller/pingmesh/verdict_findings.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

weft::v1::PingmeshVerdict Verdict(const std::string& kind, const std::string& component,
                                  std::vector<std::string> nodes) {
  weft::v1::PingmeshVerdict verdict;
  verdict.set_kind(kind);
  verdict.set_component(component);
  verdict.set_problem(kind == "host" ? "slow" : "loss");
  verdict.set_loss_rate(0.25);
  verdict.set_host_delay_us(1500);
  verdict.set_confidence(0.9);
  verdict.set_since_us(1'800'000'000'000'000);
  verdict.set_evidence("12 of 12 streams lossy");
  for (const std::string& node : nodes) verdict.add_nodes(node);
  return verdict;
}

TEST(VerdictFindingsTest, HostsNicsAndCablesConcernTheirNodesSwitchesNone) {
  const auto by_node = FindingsByNode({
      Verdict("nic", "a3/mlx5_1", {"a3"}),
      Verdict("host", "b2", {"b2"}),
      Verdict("link", "a3/mlx5_0->rack-a/tor", {"a3"}),
      Verdict("switch", "spine-1", {}),
      Verdict("link", "rack-a/tor->spines", {}),
      // Two nodes' cables the localiser could not tell apart: neither is degraded.
      Verdict("link", "c1/mlx5_0->rack-c/tor + c2/mlx5_0->rack-c/tor", {"c1", "c2"}),
  });
  ASSERT_EQ(by_node.size(), 2u);
  EXPECT_EQ(by_node.count("c1"), 0u);
  EXPECT_EQ(by_node.count("c2"), 0u);
  const std::vector<Finding>& a3 = by_node.at("a3");
  ASSERT_EQ(a3.size(), 2u);
  EXPECT_EQ(a3[0].rule, HealthRule::kPingmeshNic);
  EXPECT_EQ(a3[0].device, "a3/mlx5_1");
  EXPECT_EQ(a3[0].port, 0u);
  EXPECT_DOUBLE_EQ(a3[0].value, 0.25);
  EXPECT_EQ(a3[0].since, absl::FromUnixSeconds(1'800'000'000));
  EXPECT_EQ(a3[0].detail, "loss, 25% of probes lost (confidence 0.90): 12 of 12 streams lossy");
  EXPECT_EQ(DescribeFinding(a3[0]),
            "pingmesh_nic on a3/mlx5_1: loss, 25% of probes lost (confidence 0.90): 12 of 12 "
            "streams lossy");
  EXPECT_EQ(a3[1].rule, HealthRule::kPingmeshLink);
  const std::vector<Finding>& b2 = by_node.at("b2");
  ASSERT_EQ(b2.size(), 1u);
  EXPECT_EQ(b2[0].rule, HealthRule::kPingmeshHost);
  EXPECT_DOUBLE_EQ(b2[0].value, 1500);
  EXPECT_EQ(b2[0].detail, "slow, host delay 1500 us (confidence 0.90): 12 of 12 streams lossy");
}

TEST(VerdictFindingsTest, SameFindingsIgnoresTheMovingEstimateOnly) {
  weft::v1::PingmeshVerdict verdict = Verdict("nic", "a3/mlx5_1", {"a3"});
  const std::vector<Finding> before = FindingsByNode({verdict}).at("a3");
  verdict.set_loss_rate(0.5);
  EXPECT_TRUE(SameFindings(before, FindingsByNode({verdict}).at("a3")));
  verdict.set_since_us(verdict.since_us() + 250'000);
  EXPECT_FALSE(SameFindings(before, FindingsByNode({verdict}).at("a3")));
  EXPECT_FALSE(SameFindings(before, {}));
  const weft::v1::PingmeshVerdict other = Verdict("nic", "a3/mlx5_0", {"a3"});
  EXPECT_FALSE(SameFindings(before, FindingsByNode({other}).at("a3")));
}

}  // namespace
}  // namespace weft::controller
