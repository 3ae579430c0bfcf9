// Jittered exponential backoff for reconnect loops ("full jitter": each delay is
// uniform in [base/2, base], base doubling up to a cap), so that a thousand agents
// reconnecting to a restarted controller spread out instead of arriving together.
// Not thread-safe: one instance per reconnect loop.
#ifndef WEFT_COMMON_BACKOFF_H_
#define WEFT_COMMON_BACKOFF_H_

#include <cstdint>

#include "absl/time/time.h"

namespace weft {

class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max, uint64_t seed);

  // The delay before the next attempt; grows with each call until Reset().
  absl::Duration Next();
  // Call after a success: the next delay starts from `initial` again.
  void Reset();
  int attempts() const { return attempts_; }

 private:
  double NextUniform();  // [0, 1), splitmix64: deterministic for a seed

  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration current_;
  int attempts_ = 0;
  uint64_t state_;
};

}  // namespace weft

#endif  // WEFT_COMMON_BACKOFF_H_
