#include "common/backoff.h"

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(BackoffTest, GrowsToCapWithJitterInUpperHalf) {
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(2), /*seed=*/7);
  absl::Duration base = absl::Milliseconds(100);
  for (int i = 0; i < 10; ++i) {
    const absl::Duration d = backoff.Next();
    EXPECT_GE(d, base / 2) << "attempt " << i;
    EXPECT_LE(d, base) << "attempt " << i;
    base = std::min(base * 2, absl::Seconds(2));
  }
  EXPECT_EQ(backoff.attempts(), 10);
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(10), 1);
  for (int i = 0; i < 6; ++i) backoff.Next();
  backoff.Reset();
  EXPECT_LE(backoff.Next(), absl::Milliseconds(100));
  EXPECT_EQ(backoff.attempts(), 1);
}

TEST(BackoffTest, DifferentSeedsSpreadAgents) {
  // Two agents restarting together must not retry in lockstep.
  Backoff a(absl::Seconds(1), absl::Seconds(30), 1);
  Backoff b(absl::Seconds(1), absl::Seconds(30), 2);
  int same = 0;
  for (int i = 0; i < 5; ++i) same += (a.Next() == b.Next());
  EXPECT_LT(same, 5);
}

}  // namespace
}  // namespace weft
