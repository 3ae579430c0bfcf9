// Recursive algorithms: log2 n pairwise exchanges with partner rank ^ mask.
//
// Internal to //datapath: datapath/collectives.h chooses among the algorithms
// (CommunicatorOptions' thresholds) and annotates their errors; these run them over
// the communicator's Context (context.h). Not thread-safe: one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_RECURSIVE_H_
#define WEFT_DATAPATH_COLLECTIVES_RECURSIVE_H_

#include <cstddef>

#include "absl/status/status.h"
#include "datapath/collectives/context.h"
#include "datapath/reduce.h"

namespace weft::datapath::collectives_internal {

// In-place all-reduce by recursive doubling: log2 n exchanges of the whole buffer
// (ranks beyond a power of two fold in first); with `compress` (float32), bfloat16 on
// the wire.
absl::Status AllReduceRecursiveDoubling(Context& ctx, char* data, size_t count, DataType type,
                                        ReduceOp op, bool compress);
// In-place all-reduce with a power-of-two size: recursive halving (reduce-scatter),
// then recursive doubling of the reduced chunks (Rabenseifner's algorithm).
absl::Status AllReduceHalving(Context& ctx, char* data, size_t count, DataType type, ReduceOp op);

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_RECURSIVE_H_
