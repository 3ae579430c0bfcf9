// Barrier algorithms.
//
// Internal to //datapath: datapath/collectives.h chooses among the algorithms
// (CommunicatorOptions' thresholds) and annotates their errors; these run them over
// the communicator's Context (context.h). Not thread-safe: one operation at a time.
#ifndef WEFT_DATAPATH_COLLECTIVES_BARRIER_H_
#define WEFT_DATAPATH_COLLECTIVES_BARRIER_H_

#include <cstddef>

#include "absl/status/status.h"
#include "datapath/collectives/context.h"

namespace weft::datapath::collectives_internal {

// Dissemination: ceil(log2 n) rounds of empty messages to rank + 2^k from rank - 2^k.
absl::Status BarrierDissemination(Context& ctx);

}  // namespace weft::datapath::collectives_internal

#endif  // WEFT_DATAPATH_COLLECTIVES_BARRIER_H_
