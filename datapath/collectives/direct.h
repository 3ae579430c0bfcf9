// Everyone-to-everyone algorithms: each rank posts one message to every other rank
// at once, one round instead of n - 1 dependent ring steps.
//
// Internal to //datapath: datapath/collectives.h chooses among the algorithms
// (CommunicatorOptions' thresholds) and annotates their errors; these run them over
// the communicator's Context (context.h). Not thread-safe: one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_DIRECT_H_
#define WEFT_DATAPATH_COLLECTIVES_DIRECT_H_

#include <cstddef>

#include "absl/status/status.h"
#include "datapath/collectives/context.h"
#include "datapath/reduce.h"

namespace weft::datapath::collectives_internal {

// In-place all-reduce in two rounds: each rank reduces its chunk from what every other
// rank sends it, then sends its reduced chunk to every other rank.
absl::Status AllReduceDirect(Context& ctx, char* data, size_t count, DataType type, ReduceOp op);
// output gets this rank's block of input (size blocks of count), reduced over ranks.
absl::Status ReduceScatterDirect(Context& ctx, const char* input, char* output, size_t count,
                                 DataType type, ReduceOp op);
// output gets size blocks of block_bytes, block r from rank r's input.
absl::Status AllGatherDirect(Context& ctx, const char* input, char* output, size_t block_bytes);

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_DIRECT_H_
