// Broadcast algorithms: every rank's num_bytes at data become root's.
//
// Internal to //datapath: datapath/collectives.h chooses among the algorithms
// (CommunicatorOptions' thresholds) and annotates their errors; these run them over
// the communicator's Context (context.h). Not thread-safe: one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_BROADCAST_H_
#define WEFT_DATAPATH_COLLECTIVES_BROADCAST_H_

#include <cstddef>

#include "absl/status/status.h"
#include "datapath/collectives/context.h"

namespace weft::datapath::collectives_internal {

// Binomial tree: receive from the parent, then send to the children.
absl::Status BroadcastTree(Context& ctx, char* data, size_t num_bytes, int root);
// Chain root -> root + 1 -> ...: each segment_bytes message is forwarded as it lands.
absl::Status BroadcastChain(Context& ctx, char* data, size_t num_bytes, int root);

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_BROADCAST_H_
