#include "common/fake_clock.h"

namespace weft {

FakeClock::FakeClock(absl::Time start) : now_(start) {}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

bool FakeClock::AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                                  absl::Time deadline) const {
  if (condition.Eval()) return true;
  Wait wait{deadline};
  {
    absl::MutexLock lock(&mu_);
    if (deadline <= now_) return false;
    waits_.insert({deadline, &wait});
  }
  // Advance cannot take `mu` (its holder may be taking mu_ in Now()), so it only marks
  // the wait ended, and the waiter looks every millisecond of real time as well as
  // whenever `mu` is released.
  auto ready = [&] { return condition.Eval() || Ended(&wait); };
  while (!mu->AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(1))) {
  }
  {
    absl::MutexLock lock(&mu_);
    waits_.erase({deadline, &wait});
  }
  return condition.Eval();
}

bool FakeClock::Ended(const Wait* wait) const {
  absl::MutexLock lock(&mu_);
  return wait->ended;
}

void FakeClock::EndWaitsDueLocked() {
  while (!waits_.empty() && waits_.begin()->first <= now_) {
    waits_.begin()->second->ended = true;
    waits_.erase(waits_.begin());
  }
}

void FakeClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
  EndWaitsDueLocked();
}

void FakeClock::Set(absl::Time t) {
  absl::MutexLock lock(&mu_);
  now_ = t;
  EndWaitsDueLocked();
}

size_t FakeClock::waiters() const {
  absl::MutexLock lock(&mu_);
  return waits_.size();
}

bool FakeClock::AwaitWaiters(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waits_.size() >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

std::optional<absl::Time> FakeClock::NextDeadline() const {
  absl::MutexLock lock(&mu_);
  if (waits_.empty()) return std::nullopt;
  return waits_.begin()->first;
}

std::optional<absl::Time> FakeClock::AdvanceToNextDeadline(absl::Duration timeout) {
  if (!AwaitWaiters(1, timeout)) return std::nullopt;
  absl::MutexLock lock(&mu_);
  if (waits_.empty()) return std::nullopt;
  now_ = std::max(now_, waits_.begin()->first);
  EndWaitsDueLocked();
  return now_;
}

}  // namespace weft
