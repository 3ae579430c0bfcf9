// Ring algorithms: n - 1 steps to the next rank, each cut into segment_bytes messages
// that are reduced (or placed) as they land and forwarded at once, so consecutive steps
// overlap.
//
// Internal to //datapath: datapath/collectives.h chooses among the algorithms
// (CommunicatorOptions' thresholds) and annotates their errors; these run them over
// the communicator's Context (context.h). Not thread-safe: one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_RING_H_
#define WEFT_DATAPATH_COLLECTIVES_RING_H_

#include <cstddef>

#include "absl/status/status.h"
#include "datapath/collectives/context.h"
#include "datapath/reduce.h"

namespace weft::datapath::collectives_internal {

// In-place all-reduce: ring reduce-scatter then ring all-gather, streamed through
// ring_window scratch slots; with `compress` (float32), bfloat16 on the wire.
absl::Status AllReduceRing(Context& ctx, char* data, size_t count, DataType type, ReduceOp op,
                           bool compress);
// output gets this rank's block of input (size blocks of count), reduced over ranks.
absl::Status ReduceScatterRing(Context& ctx, const char* input, char* output, size_t count,
                               DataType type, ReduceOp op);
// output gets size blocks of block_bytes, block r from rank r's input.
absl::Status AllGatherRing(Context& ctx, const char* input, char* output, size_t block_bytes);

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_RING_H_
