#include "agent/tunables/sim_nic_tunables.h"

#include "agent/tunables/applier.h"
#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;

TEST(SimNicTunablesTest, StartsAtTheRecipeAndFirmwareDefaults) {
  SimNicTunables nic("mlx5_0");
  EXPECT_EQ(*nic.Read("rp_time_reset"), "300");
  EXPECT_EQ(*nic.Read("rp_enabled_priorities"), "0,1,2,3,4,5,6,7");
  EXPECT_EQ(*nic.Read("pfc_priorities"), "3");
  EXPECT_EQ(*nic.Read("trust"), "dscp");
  EXPECT_EQ(*nic.Read("default_roce_tos"), "106");
  EXPECT_EQ(nic.pfc_mask(), 0x08);
  EXPECT_EQ(nic.rp_mask(), 0xff);
}

TEST(SimNicTunablesTest, StartsFromAReportedStateOverTheDefaults) {
  weft::v1::NodeQos qos = RecipeQos();
  qos.clear_pfc_priorities();
  qos.add_pfc_priorities(4);
  weft::v1::DcqcnParams dcqcn;
  dcqcn.set_rp_ai_rate(20);
  dcqcn.add_rp_enabled_priorities(3);
  SimNicTunables nic("mlx5_1", qos, dcqcn);
  EXPECT_EQ(*nic.Read("pfc_priorities"), "4");
  EXPECT_EQ(*nic.Read("rp_ai_rate"), "20");
  EXPECT_EQ(*nic.Read("rp_time_reset"), "300") << "unset in the report: the default";
  EXPECT_EQ(nic.pfc_mask(), 0x10);
  EXPECT_EQ(nic.rp_mask(), 0x08);
  EXPECT_EQ(nic.values().at("rp_ai_rate"), "20");
}

TEST(SimNicTunablesTest, WritesAreCheckedLikeTheFirmwareAndDriver) {
  SimNicTunables nic("mlx5_0");
  EXPECT_THAT(nic.Write("rp_gd", "16").message(), HasSubstr("0..15"));
  EXPECT_FALSE(nic.Write("ets", "prio_tc 0,0,0,0,0,0,0,0 tsa ets,ets,ets,ets,ets,ets,ets,ets bw 10,0,0,0,0,0,0,0").ok());
  ASSERT_TRUE(nic.Write("np_cnp_prio_mode", "1").ok());
  ASSERT_TRUE(nic.Write("np_cnp_prio", "5").ok());
  EXPECT_EQ(*nic.Read("np_cnp_prio_mode"), "0");  // as mlx5 cong.c
  ASSERT_TRUE(nic.Write("dscp_to_priority", "none").ok());
  EXPECT_EQ(*nic.Read("trust"), "pcp");
  ASSERT_TRUE(nic.Write("rp_enabled_priorities", "0,1,2,4,5,6,7").ok());
  EXPECT_EQ(nic.rp_mask(), 0xf7);
}

TEST(SimNicTunablesTest, RejectFaultMakesTheApplierRestoreAndNack) {
  SimNicTunables nic("mlx5_0");
  int writes_seen = 0;
  nic.set_before_write([&writes_seen] { ++writes_seen; });
  nic.set_reject_writes(true);
  weft::v1::DesiredState state;
  state.set_version(2);
  state.mutable_dcqcn()->set_rp_ai_rate(20);
  ApplyOutcome outcome = ApplyDesiredState(state, {&nic}, false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_FALSE(outcome.errors.empty());
  EXPECT_EQ(outcome.errors[0].device(), "mlx5_0");
  EXPECT_EQ(outcome.errors[0].parameter(), "rp_ai_rate");
  EXPECT_THAT(outcome.errors[0].reason(), HasSubstr("simulated fault reject_tunables"));
  EXPECT_EQ(*nic.Read("rp_ai_rate"), "5");
  EXPECT_EQ(writes_seen, 0);
}

}  // namespace
}  // namespace weft::agent
