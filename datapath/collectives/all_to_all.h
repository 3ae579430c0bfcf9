// All-to-all(v) algorithms.
//
// Internal to //datapath: datapath/collectives.h chooses among the algorithms
// (CommunicatorOptions' thresholds) and annotates their errors; these run them over
// the communicator's Context (context.h). Not thread-safe: one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_ALL_TO_ALL_H_
#define WEFT_DATAPATH_COLLECTIVES_ALL_TO_ALL_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "datapath/collectives/context.h"
#include "datapath/reduce.h"

namespace weft::datapath::collectives_internal {

// Pairwise rounds (rank r sends to r + k and receives from r - k in round k), as many
// in flight as alltoall_bytes_in_flight allows; the rank's own block is copied locally
// while they move. Blocks are packed in rank order, send_counts[r] and recv_counts[r]
// elements each.
absl::Status AllToAllPairwise(Context& ctx, const char* input, absl::Span<const size_t> send_counts,
                              char* output, absl::Span<const size_t> recv_counts, DataType type);

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_ALL_TO_ALL_H_
