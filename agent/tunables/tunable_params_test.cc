#include "agent/tunables/tunable_params.h"

#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TunableParamsTest, ListsAndMapsRoundTrip) {
  EXPECT_EQ(FormatPriorityList({6, 3}), "3,6");
  EXPECT_EQ(FormatPriorityList({}), "none");
  EXPECT_THAT(*ParsePriorityList("3,6"), ElementsAre(3, 6));
  EXPECT_TRUE(ParsePriorityList("none")->empty());
  EXPECT_THAT(ParsePriorityList("3,x").status().message(), HasSubstr("'x'"));
  EXPECT_EQ(FormatDscpMap({{48, 6}, {26, 3}}), "26:3,48:6");
  EXPECT_EQ(FormatDscpMap({}), "none");
  EXPECT_EQ(*ParseDscpMap("26:3,48:6"), (std::map<uint32_t, uint32_t>{{26, 3}, {48, 6}}));
  EXPECT_FALSE(ParseDscpMap("26=3").ok());
}

TEST(TunableParamsTest, EtsRoundTrip) {
  EtsConfig ets;
  for (int i = 0; i < 8; ++i) {
    ets.prio_tc[i] = i == 3 ? 3 : (i == 6 ? 6 : 0);
    ets.tsa[i] = i == 0 || i == 3 ? 2 : 0;
    ets.bw[i] = i == 0 || i == 3 ? 50 : 0;
  }
  const std::string text = FormatEts(ets);
  EXPECT_EQ(text,
            "prio_tc 0,0,0,3,0,0,6,0 tsa ets,strict,strict,ets,strict,strict,strict,strict "
            "bw 50,0,0,50,0,0,0,0");
  absl::StatusOr<EtsConfig> parsed = ParseEts(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(FormatEts(*parsed), text);
  EXPECT_FALSE(ParseEts("prio_tc 0,0 tsa ets bw 100").ok());
  EXPECT_FALSE(ParseEts("garbage").ok());
}

TEST(TunableParamsTest, DesiredParametersInWriteOrder) {
  weft::v1::DesiredState state;
  state.set_version(1);
  *state.mutable_qos() = RecipeQos();
  state.mutable_dcqcn()->set_np_cnp_prio_mode(0);
  state.mutable_dcqcn()->set_np_cnp_prio(6);
  state.mutable_dcqcn()->set_rp_ai_rate(10);
  state.mutable_dcqcn()->add_rp_enabled_priorities(3);
  std::vector<std::string> names;
  for (const ParamValue& p : DesiredParameters(state)) names.push_back(p.parameter);
  EXPECT_THAT(names, ElementsAre("ets", "pfc_priorities", "dscp_to_priority", "trust",
                                 "default_roce_tos", "rp_ai_rate", "np_cnp_prio",
                                 "np_cnp_prio_mode", "rp_enabled_priorities"));
  EXPECT_EQ(DesiredParameters(state)[3].value, "dscp");
  EXPECT_EQ(DesiredParameters(state)[8].value, "3");
}

TEST(TunableParamsTest, NothingSetMeansNoParameters) {
  weft::v1::DesiredState state;
  state.set_version(1);
  EXPECT_TRUE(DesiredParameters(state).empty());
}

TEST(TunableParamsTest, ParamsToProtoInvertsDesiredParameters) {
  weft::v1::DesiredState state;
  state.set_version(1);
  *state.mutable_dcqcn() = DefaultDcqcnParams();
  state.mutable_qos()->set_trust(weft::v1::TRUST_MODE_PCP);
  for (int i = 0; i < 8; ++i) {
    state.mutable_qos()->add_priority_to_tc(i);
    state.mutable_qos()->add_tc_tsa(weft::v1::TSA_ETS);
    state.mutable_qos()->add_tc_bandwidth_percent(i < 4 ? 12 : 13);
  }
  state.mutable_qos()->set_default_roce_tos(0);
  ParamMap params;
  for (const ParamValue& p : DesiredParameters(state)) params[p.parameter] = p.value;
  weft::v1::DesiredState back;
  back.set_version(1);
  ParamsToProto(params, back.mutable_qos(), back.mutable_dcqcn());
  EXPECT_EQ(back.SerializeAsString(), state.SerializeAsString());
}

}  // namespace
}  // namespace weft::agent
