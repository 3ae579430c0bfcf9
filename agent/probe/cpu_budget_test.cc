#include "agent/probe/cpu_budget.h"

#include "gtest/gtest.h"

namespace weft::agent::probe {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(CpuBudgetTest, OverBudgetSlowsInProportionAndRecoversWhenWellUnder) {
  CpuBudget budget(0.02);
  EXPECT_DOUBLE_EQ(budget.Update(10.0, kT0), 1.0);
  // Half a second: too short to judge.
  EXPECT_DOUBLE_EQ(budget.Update(10.5, kT0 + absl::Milliseconds(500)), 1.0);
  // 0.08 s of CPU over 1 s: 8 % of a core against 2 %: a quarter of the rate.
  EXPECT_NEAR(budget.Update(10.08, kT0 + absl::Seconds(1)), 0.25, 1e-9);
  EXPECT_NEAR(budget.last_share(), 0.08, 1e-9);
  EXPECT_NEAR(budget.scale(), 0.25, 1e-9);
  // At 1.5 % (under budget, above half of it): unchanged.
  EXPECT_NEAR(budget.Update(10.095, kT0 + absl::Seconds(2)), 0.25, 1e-9);
  // At 0.5 %: doubles, twice, then stays at 1.
  EXPECT_NEAR(budget.Update(10.100, kT0 + absl::Seconds(3)), 0.5, 1e-9);
  EXPECT_NEAR(budget.Update(10.105, kT0 + absl::Seconds(4)), 1.0, 1e-9);
  EXPECT_NEAR(budget.Update(10.110, kT0 + absl::Seconds(5)), 1.0, 1e-9);
}

TEST(CpuBudgetTest, ThreadCpuSecondsGrowsWithWork) {
  const double before = ThreadCpuSeconds();
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + i * 0.5;
  EXPECT_GT(ThreadCpuSeconds(), before);
}

}  // namespace
}  // namespace weft::agent::probe
