#include "agent/probe/probe_scheduler.h"

#include <algorithm>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace weft::agent::probe {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

// Runs the scheduler as the prober does (send each probe when due) for `span`; returns
// the send times per flow.
std::map<size_t, std::vector<absl::Time>> RunScheduler(ProbeScheduler& scheduler, absl::Duration span) {
  std::map<size_t, std::vector<absl::Time>> sends;
  while (true) {
    auto [flow, due] = scheduler.Next();
    if (due >= kStart + span) break;
    sends[flow].push_back(due);
    scheduler.Sent(flow, due);
  }
  return sends;
}

TEST(ProbeSchedulerTest, EachFlowGetsItsRateSpreadEvenly) {
  ProbeScheduler scheduler({10, 10, 10, 10}, 1000, kStart);
  auto sends = RunScheduler(scheduler, absl::Seconds(10));
  ASSERT_EQ(sends.size(), 4u);
  std::vector<absl::Time> all;
  for (auto& [flow, times] : sends) {
    EXPECT_EQ(times.size(), 100u) << "flow " << flow;  // 10/s for 10 s
    all.insert(all.end(), times.begin(), times.end());
  }
  std::sort(all.begin(), all.end());
  // Four flows at 10/s interleave into one probe every 25 ms, never a burst.
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_NEAR(absl::ToDoubleMilliseconds(all[i] - all[i - 1]), 25.0, 1e-6) << i;
  }
}

TEST(ProbeSchedulerTest, RatesAboveTheCapAreScaledDownToIt) {
  // 3 flows asking 400/s each, 1200/s in all, under a 300/s node cap.
  ProbeScheduler scheduler({400, 400, 400}, 300, kStart);
  EXPECT_DOUBLE_EQ(scheduler.total_rate(), 300);
  EXPECT_DOUBLE_EQ(scheduler.flow_rate(0), 100);
  auto sends = RunScheduler(scheduler, absl::Seconds(4));
  size_t total = 0;
  for (auto& [flow, times] : sends) total += times.size();
  EXPECT_EQ(total, 1200u);
}

TEST(ProbeSchedulerTest, NoSecondEverHoldsMoreThanTheCapWhateverTheRates) {
  // Unequal rates under the cap in sum, but whose grids collide: the minimum gap
  // still keeps any one-second span at or under cap + 1.
  const double cap = 50;
  ProbeScheduler scheduler({49, 0.5, 0.3, 0.2}, cap, kStart);
  auto sends = RunScheduler(scheduler, absl::Seconds(20));
  std::vector<absl::Time> all;
  for (auto& [flow, times] : sends) all.insert(all.end(), times.begin(), times.end());
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_GE(all[i] - all[i - 1], absl::Seconds(1 / cap) - absl::Nanoseconds(1));
  }
  size_t j = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    while (all[i] - all[j] >= absl::Seconds(1)) ++j;
    EXPECT_LE(i - j + 1, static_cast<size_t>(cap) + 1);
  }
}

TEST(ProbeSchedulerTest, RateScaleSlowsEveryFlowAndALateSendIsNotCaughtUp) {
  ProbeScheduler scheduler({10}, 1000, kStart);
  scheduler.SetRateScale(0.5);
  EXPECT_DOUBLE_EQ(scheduler.total_rate(), 5);
  auto [flow, due] = scheduler.Next();
  // The prober was busy for 3 s: one send now, the next a full period later.
  scheduler.Sent(flow, due + absl::Seconds(3));
  EXPECT_EQ(scheduler.Next().second, due + absl::Seconds(3) + absl::Milliseconds(200));
  scheduler.SetRateScale(0);  // clamped, never a division by zero
  EXPECT_DOUBLE_EQ(scheduler.rate_scale(), 0.01);
}

}  // namespace
}  // namespace weft::agent::probe
