#include "tuning/trigger.h"

#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::tuning {
namespace {

using ::testing::HasSubstr;

TrafficMix Mix(double all_reduce, double all_to_all) {
  JobTraffic job;
  job.bytes[static_cast<int>(TrafficKind::kAllReduce)] = all_reduce;
  job.bytes[static_cast<int>(TrafficKind::kAllToAll)] = all_to_all;
  return MixOf({job});
}

// Divergence from an all-reduce-only reference is the all-to-all share.
TrafficMix Diverged(double divergence) { return Mix(1 - divergence, divergence); }

TriggerOptions Options() {
  TriggerOptions options;
  options.mix_shift_high = 0.2;
  options.mix_shift_low = 0.1;
  options.consecutive_checks = 3;
  options.kpi_regression = 0.1;
  options.cooldown = absl::Minutes(10);
  return options;
}

class TriggerTest : public ::testing::Test {
 protected:
  TriggerTest() : trigger_(*Trigger::Create(Options())) { trigger_.SetReference(Mix(1, 0)); }

  // One check a minute.
  TriggerReason Check(const TrafficMix& mix, const std::vector<JobKpi>& kpis = {}) {
    now_ += absl::Minutes(1);
    last_ = trigger_.Check(now_, mix, kpis);
    return last_.fired;
  }

  Trigger trigger_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
  TriggerDecision last_;
};

TEST(TriggerOptionsTest, BadThresholdsAreRefusedNamingTheField) {
  TriggerOptions o = Options();
  o.mix_shift_low = 0.3;  // above high
  absl::Status s = ValidateTriggerOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("mix_shift_low is 0.3"));
  o = Options();
  o.mix_shift_high = 1.5;
  EXPECT_THAT(std::string(ValidateTriggerOptions(o).message()), HasSubstr("(0, 1]"));
  o = Options();
  o.consecutive_checks = 0;
  EXPECT_THAT(std::string(Trigger::Create(o).status().message()),
              HasSubstr("consecutive_checks is 0"));
  o = Options();
  o.kpi_regression = 0;
  EXPECT_THAT(std::string(ValidateTriggerOptions(o).message()), HasSubstr("kpi_regression"));
  o = Options();
  o.cooldown = -absl::Seconds(1);
  EXPECT_FALSE(ValidateTriggerOptions(o).ok());
  EXPECT_TRUE(ValidateTriggerOptions(Options()).ok());
}

TEST_F(TriggerTest, MixShiftFiresAfterConsecutiveChecksAboveHigh) {
  EXPECT_EQ(Check(Diverged(0.5)), TriggerReason::kNone);
  EXPECT_EQ(Check(Diverged(0.5)), TriggerReason::kNone);
  EXPECT_EQ(Check(Diverged(0.15)), TriggerReason::kNone);  // between: the run restarts
  EXPECT_EQ(Check(Diverged(0.5)), TriggerReason::kNone);
  EXPECT_EQ(Check(Diverged(0.5)), TriggerReason::kNone);
  EXPECT_EQ(Check(Diverged(0.5)), TriggerReason::kMixShift);
  EXPECT_NEAR(*last_.divergence, 0.5, 1e-12);
  EXPECT_THAT(last_.detail, HasSubstr("diverged 0.50 > 0.20 on 3 checks"));
  EXPECT_THAT(last_.detail, HasSubstr("all_to_all 50%"));
}

TEST_F(TriggerTest, NoFlappingAroundTheThreshold) {
  for (int i = 0; i < 3; ++i) Check(Diverged(0.25));
  ASSERT_EQ(last_.fired, TriggerReason::kMixShift);
  // Hovering around the high threshold, long past the cooldown: never fires again.
  int fired = 0;
  for (int i = 0; i < 60; ++i) {
    if (Check(Diverged(i % 2 == 0 ? 0.19 : 0.25)) != TriggerReason::kNone) ++fired;
  }
  for (int i = 0; i < 10; ++i) {
    if (Check(Diverged(0.3)) != TriggerReason::kNone) ++fired;
  }
  EXPECT_EQ(fired, 0);
  // Back below the low threshold once re-arms it; the next sustained shift fires.
  EXPECT_EQ(Check(Diverged(0.05)), TriggerReason::kNone);
  Check(Diverged(0.3));
  Check(Diverged(0.3));
  EXPECT_EQ(Check(Diverged(0.3)), TriggerReason::kMixShift);
}

TEST_F(TriggerTest, CooldownHoldsEveryFiring) {
  for (int i = 0; i < 3; ++i) Check(Diverged(0.5));
  ASSERT_EQ(last_.fired, TriggerReason::kMixShift);
  // The jobs slow down right after: due after 3 checks, held until 10 min after firing.
  const std::vector<JobKpi> slow = {{.iteration_s = 1.5, .baseline_s = 1.0}};
  for (int minute = 1; minute < 10; ++minute) {
    EXPECT_EQ(Check(Diverged(0.5), slow), TriggerReason::kNone) << minute;
  }
  EXPECT_EQ(Check(Diverged(0.5), slow), TriggerReason::kKpiRegression);
  EXPECT_THAT(last_.detail, HasSubstr("50.0 % above its baseline"));
}

TEST_F(TriggerTest, KpiRegressionUsesTheMedianJobAgainstItsOwnBaseline) {
  EXPECT_EQ(KpiRegression({}), std::nullopt);
  EXPECT_EQ(KpiRegression({{.iteration_s = 1, .baseline_s = 0}}), std::nullopt);
  // One very slow job does not move the median of three.
  const std::vector<JobKpi> one_outlier = {{.iteration_s = 10, .baseline_s = 1},
                                           {.iteration_s = 2.1, .baseline_s = 2},
                                           {.iteration_s = 0.5, .baseline_s = 0.5}};
  EXPECT_NEAR(*KpiRegression(one_outlier), 0.05, 1e-12);
  const std::vector<JobKpi> slow = {{.iteration_s = 1.3, .baseline_s = 1},
                                    {.iteration_s = 2.4, .baseline_s = 2}};
  EXPECT_NEAR(*KpiRegression(slow), 0.25, 1e-12);

  const TrafficMix same = Mix(1, 0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Check(same, one_outlier), TriggerReason::kNone);
  EXPECT_EQ(Check(same, slow), TriggerReason::kNone);
  EXPECT_EQ(Check(same, {}), TriggerReason::kNone);  // no evidence breaks the run
  EXPECT_EQ(Check(same, slow), TriggerReason::kNone);
  EXPECT_EQ(Check(same, slow), TriggerReason::kNone);
  EXPECT_EQ(Check(same, slow), TriggerReason::kKpiRegression);
  // Still slow after the cooldown: it stays disarmed until the jobs recover.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Check(same, slow), TriggerReason::kNone);
  Check(same, one_outlier);
  for (int i = 0; i < 2; ++i) Check(same, slow);
  EXPECT_EQ(Check(same, slow), TriggerReason::kKpiRegression);
}

TEST_F(TriggerTest, ReferenceStartsEmptyAndMovesWithTheProfile) {
  Trigger fresh = *Trigger::Create(Options());
  EXPECT_TRUE(fresh.reference().empty());
  absl::Time t = now_;
  TriggerReason fired = TriggerReason::kNone;
  // No declared traffic: nothing to diverge from.
  for (int i = 0; i < 5; ++i) fired = fresh.Check(t += absl::Minutes(1), TrafficMix{}, {}).fired;
  EXPECT_EQ(fired, TriggerReason::kNone);
  for (int i = 0; i < 3; ++i) fired = fresh.Check(t += absl::Minutes(1), Mix(0, 1), {}).fired;
  EXPECT_EQ(fired, TriggerReason::kMixShift);
  // Once a profile tuned for this mix is in force, the same mix re-arms it.
  fresh.SetReference(Mix(0, 1));
  EXPECT_EQ(*fresh.Check(t += absl::Minutes(1), Mix(0, 1), {}).divergence, 0);
}

}  // namespace
}  // namespace weft::tuning
