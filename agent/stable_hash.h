// StableHash: a 64-bit hash of a string that is the same in every process and on every
// machine (FNV-1a followed by a splitmix64 finalizer), for seeds derived from a node
// name: the simulated traffic model and the reconnect jitter. absl::Hash and std::hash
// are not fit for that: their values may change between runs or builds.
// Pure function: thread-safe.
#ifndef WEFT_AGENT_STABLE_HASH_H_
#define WEFT_AGENT_STABLE_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace weft::agent {

uint64_t StableHash(absl::string_view text);

// splitmix64's output function: mixes `x` into a well-distributed 64-bit value.
// MixBits(seed + i) gives independent-looking streams per index i.
uint64_t MixBits(uint64_t x);

}  // namespace weft::agent

#endif  // WEFT_AGENT_STABLE_HASH_H_
