#include "store/etcd/lease_timer.h"

#include "gtest/gtest.h"

namespace weft::store::etcd {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(LeaseTimerTest, StepsDownAQuarterTtlBeforeTheLeaseCanExpire) {
  LeaseTimer timer(absl::Seconds(5));
  timer.Renewed(kT0, absl::Seconds(5));
  EXPECT_EQ(timer.EarliestExpiry(), kT0 + absl::Seconds(5));
  EXPECT_EQ(timer.StepDownAt(), kT0 + absl::Milliseconds(3750));
  EXPECT_TRUE(timer.Safe(kT0 + absl::Milliseconds(3749)));
  EXPECT_FALSE(timer.Safe(kT0 + absl::Milliseconds(3750)));
}

TEST(LeaseTimerTest, RenewsEveryThirdOfTheTtlSoTwoFailuresFitBeforeStepDown) {
  LeaseTimer timer(absl::Seconds(6));
  timer.Renewed(kT0, absl::Seconds(6));
  EXPECT_EQ(timer.NextRenewalAt(), kT0 + absl::Seconds(2));
  timer.RenewalFailed(kT0 + absl::Seconds(2));
  EXPECT_EQ(timer.NextRenewalAt(), kT0 + absl::Milliseconds(2600));
  timer.RenewalFailed(kT0 + absl::Milliseconds(2600));
  EXPECT_LT(timer.NextRenewalAt(), timer.StepDownAt());
  // A failure does not move the step-down: only a success does.
  EXPECT_EQ(timer.StepDownAt(), kT0 + absl::Milliseconds(4500));
  timer.Renewed(kT0 + absl::Seconds(3), absl::Seconds(6));
  EXPECT_EQ(timer.StepDownAt(), kT0 + absl::Milliseconds(7500));
}

TEST(LeaseTimerTest, FollowsTheTtlEtcdGranted) {
  // etcd raises a TTL below its minimum (1.5 × election timeout).
  LeaseTimer timer(absl::Seconds(1));
  timer.Renewed(kT0, absl::Seconds(2));
  EXPECT_EQ(timer.StepDownAt(), kT0 + absl::Milliseconds(1500));
}

TEST(LeaseTimerTest, NeverRenewedIsNeverSafe) {
  LeaseTimer timer(absl::Seconds(5));
  EXPECT_FALSE(timer.Safe(kT0));
}

}  // namespace
}  // namespace weft::store::etcd
