// HealthTracker hysteresis, driven by a FakeClock: no flip before degrade_after, no
// recovery before recover_after of continuous clean observations.
#include "controller/health/health_tracker.h"

#include <optional>

#include "common/daemon_config.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

constexpr std::nullopt_t kClean = std::nullopt;

class HealthTrackerTest : public ::testing::Test {
 protected:
  // Observes at the clock's now after advancing it by `step`.
  bool ObserveAfter(absl::Duration step, std::optional<absl::Time> firing_since) {
    clock_.Advance(step);
    return tracker_.Observe(clock_.Now(), firing_since);
  }

  FakeClock clock_;
  HealthTracker tracker_{HealthTimings{absl::Seconds(2), absl::Seconds(10)}};
};

TEST(HealthTimingsTest, DefaultsMatchTheConfigDefaults) {
  const HealthTimings from_config =
      HealthTimings::FromConfig(DefaultControllerConfig().health());
  EXPECT_EQ(from_config.degrade_after, HealthTimings().degrade_after);
  EXPECT_EQ(from_config.recover_after, HealthTimings().recover_after);
}

TEST_F(HealthTrackerTest, StartsHealthyAndStaysSoWhileClean) {
  EXPECT_EQ(tracker_.state(), weft::v1::NODE_STATE_HEALTHY);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(ObserveAfter(absl::Seconds(1), kClean));
  EXPECT_FALSE(tracker_.degraded());
}

TEST_F(HealthTrackerTest, DegradesOnlyOnceTheConditionHeldDegradeAfter) {
  EXPECT_FALSE(ObserveAfter(absl::ZeroDuration(), kClean));  // starts watching
  const absl::Time start = clock_.Now() + absl::Milliseconds(250);
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(1250), start));  // held 1 s
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(999), start));   // held 1.999 s
  EXPECT_FALSE(tracker_.degraded());
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(1), start));  // held exactly 2 s
  EXPECT_EQ(tracker_.state(), weft::v1::NODE_STATE_DEGRADED);
  EXPECT_FALSE(ObserveAfter(absl::Seconds(1), start)) << "no second transition";
}

TEST_F(HealthTrackerTest, ACleanObservationRestartsTheDegradeClock) {
  tracker_.Observe(clock_.Now(), kClean);
  const absl::Time first = clock_.Now();
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(1500), first));
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(250), kClean));
  const absl::Time second = clock_.Now();
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(1900), second));
  EXPECT_FALSE(tracker_.degraded());
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(100), second));
}

TEST_F(HealthTrackerTest, RulesTakingTurnsCountAsOneCondition) {
  tracker_.Observe(clock_.Now(), kClean);
  const absl::Time a = clock_.Now();
  EXPECT_FALSE(ObserveAfter(absl::Seconds(1), a));
  // Rule A cleared as rule B (firing since a + 0.5 s) took over: still one condition
  // since `a`.
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(500), a + absl::Milliseconds(500)));
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(500), a + absl::Milliseconds(500)));
}

TEST_F(HealthTrackerTest, RecoversOnlyAfterRecoverAfterOfContinuousClean) {
  tracker_.Observe(clock_.Now(), kClean);
  ASSERT_TRUE(ObserveAfter(absl::Seconds(2), clock_.Now()));
  EXPECT_FALSE(ObserveAfter(absl::Seconds(1), kClean));  // clean since here
  EXPECT_FALSE(ObserveAfter(absl::Seconds(9), kClean));  // 9 s clean
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(500), clock_.Now()));  // fires again
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(500), kClean));  // clean restarts
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(9999), kClean));
  EXPECT_TRUE(tracker_.degraded());
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(1), kClean));  // exactly 10 s clean
  EXPECT_EQ(tracker_.state(), weft::v1::NODE_STATE_HEALTHY);
}

TEST_F(HealthTrackerTest, DoesNotVouchForTimeItDidNotWatch) {
  // A condition "since" an hour before the first observation counts from the first
  // observation.
  const absl::Time long_ago = clock_.Now() - absl::Hours(1);
  EXPECT_FALSE(ObserveAfter(absl::ZeroDuration(), long_ago));
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(1999), long_ago));
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(1), long_ago));
}

TEST_F(HealthTrackerTest, SuspendKeepsTheStateButRestartsTheTimers) {
  tracker_.Observe(clock_.Now(), kClean);
  ASSERT_TRUE(ObserveAfter(absl::Seconds(2), clock_.Now() - absl::Seconds(2)));
  EXPECT_FALSE(ObserveAfter(absl::Seconds(8), kClean));  // 8 s of the 10 s done
  tracker_.Suspend();                                    // the node went DOWN
  clock_.Advance(absl::Minutes(5));
  EXPECT_TRUE(tracker_.degraded());
  EXPECT_FALSE(ObserveAfter(absl::ZeroDuration(), kClean)) << "back: clean starts now";
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(9999), kClean));
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(1), kClean));
}

TEST_F(HealthTrackerTest, ResumeSetsWhereWatchingStarts) {
  // Registered (Resume) at t; the first sweep only comes 1.5 s later: the condition
  // seen since t + 0.5 s counts from there, not from the first sweep.
  const absl::Time t = clock_.Now();
  tracker_.Resume(t);
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(1500), t + absl::Milliseconds(500)));
  EXPECT_TRUE(ObserveAfter(absl::Seconds(1), t + absl::Milliseconds(500)));

  // Back from DOWN: Suspend, then Resume when telemetry resumes.
  tracker_.Suspend();
  const absl::Time back = clock_.Now() + absl::Minutes(1);
  clock_.Set(back);
  tracker_.Resume(back);
  ASSERT_TRUE(tracker_.degraded());
  // Recovery counts clean observations only: from the first one after the return.
  EXPECT_FALSE(ObserveAfter(absl::Seconds(5), std::nullopt));
  EXPECT_FALSE(ObserveAfter(absl::Milliseconds(9999), std::nullopt));
  EXPECT_TRUE(ObserveAfter(absl::Milliseconds(1), std::nullopt));
}

TEST(HealthTrackerZeroTest, ZeroTimesFlipOnTheFirstObservation) {
  HealthTracker tracker(HealthTimings{absl::ZeroDuration(), absl::ZeroDuration()});
  const absl::Time t = absl::FromUnixSeconds(100);
  EXPECT_TRUE(tracker.Observe(t, t));
  EXPECT_TRUE(tracker.degraded());
  EXPECT_TRUE(tracker.Observe(t + absl::Seconds(1), std::nullopt));
  EXPECT_FALSE(tracker.degraded());
}

}  // namespace
}  // namespace weft::controller
