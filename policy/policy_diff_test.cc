#include "policy/policy_diff.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::policy {
namespace {

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

weft::v1::DesiredState State(uint32_t ai_rate, bool with_qos) {
  weft::v1::DesiredState state;
  state.set_version(9);  // versions and nonces are not tunables
  state.set_nonce("x");
  state.mutable_dcqcn()->set_rp_ai_rate(ai_rate);
  state.mutable_dcqcn()->add_rp_enabled_priorities(3);
  if (with_qos) {
    state.mutable_qos()->set_trust(weft::v1::TRUST_MODE_DSCP);
    (*state.mutable_qos()->mutable_dscp_to_priority())[48] = 6;
    (*state.mutable_qos()->mutable_dscp_to_priority())[26] = 3;
    state.mutable_qos()->add_tc_tsa(weft::v1::TSA_STRICT);
  }
  return state;
}

TEST(PolicyDiffTest, FlattensSetFieldsOnly) {
  EXPECT_THAT(FlattenDesiredState(State(5, true)),
              UnorderedElementsAre(Pair("dcqcn.rp_ai_rate", "5"),
                                   Pair("dcqcn.rp_enabled_priorities", "3"),
                                   Pair("qos.trust", "TRUST_MODE_DSCP"),
                                   Pair("qos.dscp_to_priority", "26:3,48:6"),
                                   Pair("qos.tc_tsa", "TSA_STRICT")));
  EXPECT_EQ(FlattenDesiredState(State(5, false)).count("qos.trust"), 0u);
}

TEST(PolicyDiffTest, CountsNodesPerChange) {
  std::map<std::string, std::optional<weft::v1::DesiredState>> current = {
      {"a", State(5, true)}, {"b", State(5, true)}, {"c", State(20, true)}, {"d", std::nullopt}};
  std::map<std::string, weft::v1::DesiredState> next = {
      {"a", State(20, true)}, {"b", State(20, true)}, {"c", State(20, true)},
      {"d", State(20, true)}};
  const weft::v1::DiffPolicyResponse diff = DiffDesiredStates(current, next);
  EXPECT_EQ(diff.nodes_total(), 4u);
  EXPECT_EQ(diff.nodes_changed(), 3u);  // c already has it
  ASSERT_GE(diff.changes_size(), 2);
  // rp_ai_rate: 5 -> 20 on a and b; "" -> 20 on d (no desired state yet).
  std::vector<std::tuple<std::string, std::string, std::string, uint32_t>> got;
  for (const auto& c : diff.changes()) got.emplace_back(c.parameter(), c.from(), c.to(), c.nodes());
  EXPECT_THAT(got, ::testing::Contains(std::make_tuple("dcqcn.rp_ai_rate", "5", "20", 2u)));
  EXPECT_THAT(got, ::testing::Contains(std::make_tuple("dcqcn.rp_ai_rate", "", "20", 1u)));
  EXPECT_THAT(got, ::testing::Contains(std::make_tuple("qos.trust", "", "TRUST_MODE_DSCP", 1u)));
}

TEST(PolicyDiffTest, DroppingQosShowsItLeftAsIs) {
  const weft::v1::DiffPolicyResponse diff =
      DiffDesiredStates({{"a", State(5, true)}}, {{"a", State(5, false)}});
  EXPECT_EQ(diff.nodes_changed(), 1u);
  ASSERT_GT(diff.changes_size(), 0);
  EXPECT_EQ(diff.changes(0).to(), "(left as is)");
}

}  // namespace
}  // namespace weft::policy
