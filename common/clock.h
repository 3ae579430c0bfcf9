// Clock: the time source every component takes in its constructor, so tests drive
// liveness, rates, backoff, tickers and timeouts with a FakeClock (common/fake_clock.h)
// instead of sleeping. Waits are on the clock's time and end early when their condition
// holds, which is how they are cancelled. Implementations are thread-safe.
#ifndef WEFT_COMMON_CLOCK_H_
#define WEFT_COMMON_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace weft {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;

  // With `mu` held: waits until `condition` holds or this clock reaches `deadline`,
  // as absl::Mutex::AwaitWithDeadline does on real time. Returns whether `condition`
  // holds. Another thread cancels the wait by making `condition` true under `mu`.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                                 absl::Time deadline) const = 0;

  // Sleeps until this clock reaches `deadline`; nothing cancels it.
  void SleepUntil(absl::Time deadline) const {
    static constexpr bool kNever = false;
    absl::Mutex mu;
    absl::MutexLock lock(&mu);
    AwaitWithDeadline(&mu, absl::Condition(&kNever), deadline);
  }
};

// Wall-clock time from absl::Now().
class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) const override {
    return mu->AwaitWithDeadline(condition, deadline);
  }
};

// The tick after `last` on the grid `last` + k·`period`: `last` + `period` unless that
// is already past at `now`, then the first tick after `now` (the missed ones skipped,
// not bunched up).
inline absl::Time NextTick(absl::Time last, absl::Time now, absl::Duration period) {
  absl::Time next = last + period;
  if (next < now) next += ((now - next) / period + 1) * period;
  return next;
}

}  // namespace weft

#endif  // WEFT_COMMON_CLOCK_H_
