#include "common/backoff.h"

#include <algorithm>

namespace weft {

Backoff::Backoff(absl::Duration initial, absl::Duration max, uint64_t seed)
    : initial_(initial), max_(std::max(initial, max)), current_(initial), state_(seed) {}

double Backoff::NextUniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53);
}

absl::Duration Backoff::Next() {
  const absl::Duration base = current_;
  current_ = std::min(current_ * 2, max_);
  ++attempts_;
  return base / 2 + base / 2 * NextUniform();
}

void Backoff::Reset() {
  current_ = initial_;
  attempts_ = 0;
}

}  // namespace weft
