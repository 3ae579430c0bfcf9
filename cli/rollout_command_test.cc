#include "cli/rollout_command.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z

int64_t Us(absl::Duration after) { return absl::ToUnixMicros(kT0 + after); }

weft::v1::Rollout Baking() {
  weft::v1::Rollout r;
  r.set_id("rollout-3");
  r.set_version(3);
  r.set_rollback_version(4);
  r.set_previous_version(1);
  r.mutable_previous_policy();
  r.set_source("policy.yaml");
  r.set_started_by("dev-admin");
  r.set_phase(weft::v1::ROLLOUT_PHASE_BAKING);
  r.set_phase_since_us(Us(absl::Seconds(10)));
  r.mutable_policy()->mutable_rollout()->set_bake_s(60);
  r.mutable_policy()->mutable_rollout()->set_wave_bake_s(30);
  weft::v1::RolloutStep* canary = r.add_steps();
  canary->set_index(0);
  for (const char* n : {"a", "b", "c"}) canary->add_nodes(n);
  canary->set_started_us(Us(absl::ZeroDuration()));
  canary->set_applied_us(Us(absl::Seconds(10)));
  canary->set_acked(3);
  weft::v1::RolloutStep* wave = r.add_steps();
  wave->set_index(1);
  wave->add_nodes("d");
  weft::v1::KpiJudgement* j = r.mutable_last_judgement();
  j->set_at_us(Us(absl::Seconds(30)));
  j->set_changed_nodes(3);
  j->set_control_nodes(1);
  j->set_control("unchanged nodes");
  weft::v1::KpiValue* kpi = j->add_kpis();
  kpi->set_name("pfc_pause_share");
  kpi->set_changed(0.2);
  kpi->set_control(0.001);
  kpi->set_limit(0.051);
  kpi->set_regressed(true);
  weft::v1::RolloutEvent* e = r.add_history();
  e->set_at_us(Us(absl::ZeroDuration()));
  e->set_message("canary started: version 3 sent to 3 nodes");
  return r;
}

TEST(FormatRolloutStatusTest, ShowsStepsKpisAndEvents) {
  const std::string text = FormatRolloutStatus(Baking(), kT0 + absl::Seconds(25));
  EXPECT_THAT(text, HasSubstr("rollout rollout-3  version 3  phase BAKING since "
                              "2027-01-15T08:00:10Z"));
  EXPECT_THAT(text, HasSubstr("source policy.yaml, started by dev-admin; last good version 1; "
                              "a rollback sends version 4"));
  EXPECT_THAT(text, HasSubstr("canary *  3      3      0       0          baking 15/60 s"));
  EXPECT_THAT(text, HasSubstr("wave 1    1      0      0       0          not started"));
  EXPECT_THAT(text, HasSubstr("3 changed nodes against unchanged nodes (1)"));
  EXPECT_THAT(text, HasSubstr("pfc_pause_share  0.2      0.001    0.051  REGRESSED"));
  EXPECT_THAT(text, HasSubstr("2027-01-15T08:00:00Z  canary started"));
}

TEST(FormatRolloutStatusTest, PausedAndRolledBack) {
  weft::v1::Rollout r = Baking();
  r.set_phase(weft::v1::ROLLOUT_PHASE_PAUSED);
  r.set_paused_phase(weft::v1::ROLLOUT_PHASE_BAKING);
  EXPECT_THAT(FormatRolloutStatus(r, kT0), HasSubstr("paused in BAKING"));
  r.set_phase(weft::v1::ROLLOUT_PHASE_ROLLED_BACK);
  r.set_reason("canary: 1 of 3 nodes NACKed");
  r.clear_previous_policy();
  const std::string text = FormatRolloutStatus(r, kT0);
  EXPECT_THAT(text, HasSubstr("reason: canary: 1 of 3 nodes NACKed"));
  EXPECT_THAT(text, HasSubstr("last good version none (firmware defaults)"));
  EXPECT_THAT(text, HasSubstr("canary *  3      3      0       0          applied"));
}

TEST(FormatRolloutHistoryTest, OneRowPerRollout) {
  weft::v1::ListRolloutsResponse list;
  EXPECT_EQ(FormatRolloutHistory(list), "no rollouts\n");
  *list.add_rollouts() = Baking();
  list.mutable_rollouts(0)->set_created_us(Us(absl::ZeroDuration()));
  const std::string text = FormatRolloutHistory(list);
  EXPECT_THAT(text, HasSubstr("ID         VERSION  PHASE   CREATED"));
  EXPECT_THAT(text, HasSubstr("rollout-3  3        BAKING  2027-01-15T08:00:00Z  -"));
}

}  // namespace
}  // namespace weft
