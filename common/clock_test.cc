#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/fake_clock.h"
#include "common/periodic_task.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

// A thread that waits on a FakeClock until `deadline` or until it is cancelled.
class Waiter {
 public:
  Waiter(const FakeClock* clock, absl::Time deadline)
      : thread_([this, clock, deadline] {
          absl::MutexLock lock(&mu_);
          const bool cancelled = clock->AwaitWithDeadline(&mu_, absl::Condition(&cancel_), deadline);
          ended_at_ = clock->Now();
          result_ = cancelled ? 1 : 0;
        }) {}
  ~Waiter() { Join(); }
  void Cancel() {
    absl::MutexLock lock(&mu_);
    cancel_ = true;
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // -1 while waiting, 0 when the deadline ended it, 1 when it was cancelled.
  int result() {
    absl::MutexLock lock(&mu_);
    return result_;
  }
  absl::Time ended_at() {
    absl::MutexLock lock(&mu_);
    return ended_at_;
  }

 private:
  absl::Mutex mu_;
  bool cancel_ ABSL_GUARDED_BY(mu_) = false;
  int result_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Time ended_at_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

TEST(FakeClockTest, AWaitEndsWhenTimeReachesItsDeadlineNotBefore) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  Waiter waiter(&clock, start + absl::Seconds(10));
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.NextDeadline(), start + absl::Seconds(10));
  clock.Advance(absl::Seconds(9));
  // Still waiting: the clock says so, and so does the thread.
  EXPECT_EQ(clock.waiters(), 1u);
  EXPECT_EQ(waiter.result(), -1);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(clock.waiters(), 0u);
  waiter.Join();
  EXPECT_EQ(waiter.result(), 0);
  EXPECT_EQ(waiter.ended_at(), start + absl::Seconds(10));
}

TEST(FakeClockTest, AConditionCancelsTheWaitWithoutMovingTime) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  Waiter waiter(&clock, start + absl::Hours(1));
  ASSERT_TRUE(clock.AwaitWaiters(1));
  waiter.Cancel();
  waiter.Join();
  EXPECT_EQ(waiter.result(), 1);
  EXPECT_EQ(waiter.ended_at(), start);
  EXPECT_EQ(clock.waiters(), 0u);
  EXPECT_EQ(clock.NextDeadline(), std::nullopt);
}

TEST(FakeClockTest, APastDeadlineOrATrueConditionDoesNotWait) {
  FakeClock clock;
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  const bool yes = true;
  const bool no = false;
  EXPECT_TRUE(clock.AwaitWithDeadline(&mu, absl::Condition(&yes), clock.Now() + absl::Hours(1)));
  EXPECT_FALSE(clock.AwaitWithDeadline(&mu, absl::Condition(&no), clock.Now()));
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(FakeClockTest, AdvanceToNextDeadlineEndsTheEarliestWaitsOnly) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  Waiter late(&clock, start + absl::Seconds(5));
  Waiter early(&clock, start + absl::Seconds(2));
  ASSERT_TRUE(clock.AwaitWaiters(2));
  EXPECT_EQ(clock.AdvanceToNextDeadline(), start + absl::Seconds(2));
  early.Join();
  EXPECT_EQ(early.result(), 0);
  EXPECT_EQ(late.result(), -1);
  EXPECT_EQ(clock.waiters(), 1u);
  EXPECT_EQ(clock.AdvanceToNextDeadline(), start + absl::Seconds(5));
  late.Join();
  EXPECT_EQ(late.ended_at(), start + absl::Seconds(5));
}

TEST(FakeClockTest, AwaitWaitersGivesUpWhenNobodyWaits) {
  FakeClock clock;
  EXPECT_FALSE(clock.AwaitWaiters(1, absl::Milliseconds(10)));
  EXPECT_EQ(clock.AdvanceToNextDeadline(absl::Milliseconds(10)), std::nullopt);
}

TEST(FakeClockTest, SleepUntilSleepsOnTheClock) {
  FakeClock clock;
  const absl::Time wake = clock.Now() + absl::Minutes(3);
  std::thread sleeper([&] { clock.SleepUntil(wake); });
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.NextDeadline(), wake);
  clock.Set(wake);
  sleeper.join();
  EXPECT_EQ(clock.waiters(), 0u);
}

TEST(RealClockTest, WaitsEndAtTheDeadlineOrWhenTheConditionHolds) {
  RealClock clock;
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  const bool no = false;
  const absl::Time start = absl::Now();
  EXPECT_FALSE(clock.AwaitWithDeadline(&mu, absl::Condition(&no), start + absl::Milliseconds(20)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
  const bool yes = true;
  EXPECT_TRUE(clock.AwaitWithDeadline(&mu, absl::Condition(&yes), absl::InfiniteFuture()));
}

TEST(NextTickTest, KeepsTheGridAndSkipsMissedTicks) {
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  const absl::Duration p = absl::Milliseconds(100);
  EXPECT_EQ(NextTick(t0, t0, p), t0 + p);
  EXPECT_EQ(NextTick(t0, t0 + p, p), t0 + p);  // due now: runs now
  EXPECT_EQ(NextTick(t0, t0 + absl::Milliseconds(150), p), t0 + 2 * p);
  EXPECT_EQ(NextTick(t0, t0 + absl::Milliseconds(1050), p), t0 + 11 * p);
}

TEST(PeriodicTaskTest, RunsOncePerPeriodOfTheClockAndSkipsWhatAJumpMissed) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  std::vector<absl::Time> runs;
  absl::Mutex runs_mu;
  PeriodicTask task(&clock, absl::Milliseconds(25), [&] {
    absl::MutexLock lock(&runs_mu);
    runs.push_back(clock.Now());
  });
  task.Start();
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.NextDeadline(), start + absl::Milliseconds(25));
  clock.Advance(absl::Milliseconds(24));
  ASSERT_TRUE(clock.AwaitWaiters(1));
  clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(clock.AwaitWaiters(1));  // ran, and waits again
  EXPECT_EQ(clock.NextDeadline(), start + absl::Milliseconds(50));
  // A jump of 300 ms: one run, then the grid goes on after it.
  clock.Advance(absl::Milliseconds(300));
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_EQ(clock.NextDeadline(), start + absl::Milliseconds(350));
  task.Stop();
  absl::MutexLock lock(&runs_mu);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0], start + absl::Milliseconds(25));
  EXPECT_EQ(runs[1], start + absl::Milliseconds(325));
}

TEST(PeriodicTaskTest, StopEndsAWaitAtOnceAndNeverRunsAgain) {
  FakeClock clock;
  std::atomic<int> runs{0};
  PeriodicTask task(&clock, absl::Hours(1), [&] { ++runs; });
  task.Start();
  ASSERT_TRUE(clock.AwaitWaiters(1));
  task.Stop();
  task.Stop();  // idempotent
  EXPECT_EQ(clock.waiters(), 0u);
  clock.Advance(absl::Hours(2));
  EXPECT_EQ(runs.load(), 0);
}

}  // namespace
}  // namespace weft
