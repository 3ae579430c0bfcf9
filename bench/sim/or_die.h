// The fabric-twin benches' way out on an error they cannot go on from: print the status
// on stderr and exit(1). Benches only (a bench that cannot build its scenario measures
// nothing); libraries return absl::Status.
#ifndef WEFT_BENCH_SIM_OR_DIE_H_
#define WEFT_BENCH_SIM_OR_DIE_H_

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft::bench {

inline void OrDie(const absl::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    std::exit(1);
  }
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  OrDie(value.status());
  return *std::move(value);
}

}  // namespace weft::bench

#endif  // WEFT_BENCH_SIM_OR_DIE_H_
