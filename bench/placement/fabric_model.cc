#include "bench/placement/fabric_model.h"

#include <algorithm>

namespace weft::bench {

double IterationSeconds(const FabricModel& model, const placement::LinkLoads& loads,
                        const std::vector<int>& node_rack) {
  double seconds = 0;
  for (size_t i = 0; i < loads.node_egress_bytes.size(); ++i) {
    seconds = std::max(seconds, std::max(loads.node_egress_bytes[i],
                                         loads.node_ingress_bytes[i]) / model.node_bytes_per_s);
  }
  std::vector<int> job_nodes(loads.rack_egress_bytes.size(), 0);
  for (int r : node_rack) ++job_nodes[r];
  for (size_t r = 0; r < job_nodes.size(); ++r) {
    if (job_nodes[r] == 0) continue;
    const double share = job_nodes[r] * model.node_bytes_per_s / model.oversubscription;
    seconds = std::max(seconds,
                       std::max(loads.rack_egress_bytes[r], loads.rack_ingress_bytes[r]) / share);
  }
  return seconds;
}

}  // namespace weft::bench
