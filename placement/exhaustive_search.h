// Exhaustive placement for tiny clusters: the yardstick the engine is tested and
// benchmarked against. It enumerates every sequence of racks a job's nodes could have
// in rank order (position i on some rack with a free eligible node left), which covers
// every subset of eligible nodes in every order, since nodes of one rack are
// interchangeable for racks, pods and traffic. It scores each by (racks, pods,
// cross-rack bytes, cross-pod bytes), lexicographically, with the traffic model.
//
// Eligibility and constraints are re-implemented here on purpose (healthy, not drained,
// not occupied, not excluded, enough GPUs, a NIC for multi-node jobs, max_congestion,
// max_racks, single_pod) so the test does not trust the engine's own filtering.
//
// Cost: (racks with free nodes)^nodes sequences; meant for <= 12 nodes in <= 4 racks.
// Pure function; thread-safe. Test-only.
#ifndef WEFT_PLACEMENT_EXHAUSTIVE_SEARCH_H_
#define WEFT_PLACEMENT_EXHAUSTIVE_SEARCH_H_

#include <cstdint>
#include <tuple>

#include "absl/status/statusor.h"
#include "placement/topology.h"
#include "placement/traffic_model.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

struct Optimum {
  int racks = 0;
  int pods = 0;
  uint64_t cross_rack_bytes = 0;
  uint64_t cross_pod_bytes = 0;

  auto Key() const { return std::tie(racks, pods, cross_rack_bytes, cross_pod_bytes); }
};

// The best score any placement of `request` can reach, with traffic weighed by the
// request's byte sizes. RESOURCE_EXHAUSTED when no placement exists; the request's
// own errors (ResolveJobShape) as they are. gpus_per_node must be set in the request.
absl::StatusOr<Optimum> ExhaustiveOptimum(const Topology& topology,
                                          const weft::v1::Occupancy& occupancy,
                                          const weft::v1::PlacementRequest& request);

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_EXHAUSTIVE_SEARCH_H_
