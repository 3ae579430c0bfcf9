// Clock: the time source every component takes in its constructor, so tests can
// drive liveness, rates and backoff with a FakeClock (common/fake_clock.h) instead
// of sleeping. Implementations are thread-safe.
#ifndef WEFT_COMMON_CLOCK_H_
#define WEFT_COMMON_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace weft {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// Wall-clock time from absl::Now().
class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace weft

#endif  // WEFT_COMMON_CLOCK_H_
