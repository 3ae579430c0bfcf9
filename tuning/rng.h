// A small deterministic random source for the tuner (SplitMix64): the same seed gives the
// same numbers on every platform and standard library, which std::*_distribution does not
// promise; scenarios and searches stay reproducible from their seed. Not thread-safe: one
// owner draws from it.
#ifndef WEFT_TUNING_RNG_H_
#define WEFT_TUNING_RNG_H_

#include <cmath>
#include <cstdint>

namespace weft::tuning {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Uniform(double low, double high) { return low + (high - low) * Uniform(); }
  // Standard normal (Box-Muller).
  double Normal() {
    const double u = 1 - Uniform(), v = Uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  }

 private:
  uint64_t state_;
};

}  // namespace weft::tuning

#endif  // WEFT_TUNING_RNG_H_
