// FakeClock: a Clock that moves only when a test moves it, stepped deterministically:
// a test waits until the threads under test wait on the clock (AwaitWaiters), then
// moves time (Advance, or AdvanceToNextDeadline), which ends every wait whose deadline
// it reaches. Thread-safe.
#ifndef WEFT_COMMON_FAKE_CLOCK_H_
#define WEFT_COMMON_FAKE_CLOCK_H_

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace weft {

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000));

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) const override;

  // Moves time by `d` (or to `t`); every wait whose deadline is reached ends.
  void Advance(absl::Duration d);
  void Set(absl::Time t);

  // How many threads wait on this clock now (waits not yet ended).
  size_t waiters() const;
  // Waits, up to `timeout` of real time, until at least `n` threads wait on this clock;
  // false when they did not. After a move of the clock, this is how a test knows the
  // threads it woke have done their work and wait again.
  bool AwaitWaiters(size_t n, absl::Duration timeout = absl::Seconds(30)) const;
  // The earliest deadline of the waits now, if any.
  std::optional<absl::Time> NextDeadline() const;
  // AwaitWaiters(1, timeout), then moves time to the earliest deadline and returns it;
  // nullopt (time unmoved) when no thread waited in time.
  std::optional<absl::Time> AdvanceToNextDeadline(absl::Duration timeout = absl::Seconds(30));

 private:
  struct Wait {
    absl::Time deadline;
    bool ended = false;  // guarded by mu_
  };
  using Waits = std::set<std::pair<absl::Time, Wait*>>;

  void EndWaitsDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Ended(const Wait* wait) const ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  mutable Waits waits_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft

#endif  // WEFT_COMMON_FAKE_CLOCK_H_
