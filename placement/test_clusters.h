// Builders of small, hand-made cluster snapshots and requests for placement tests.
// Node names are "<rack>-<nn>" (nn from 01), so hostname order is rack order. Each
// node has `gpus` GPUs and `nics` NICs "mlx5_<i>" (netdev "ens<i>np0", RoCE v2 GID
// index 3, port 1); GPU i's closest NIC is NIC i * nics / gpus.
// Test-only; pure functions.
#ifndef WEFT_PLACEMENT_TEST_CLUSTERS_H_
#define WEFT_PLACEMENT_TEST_CLUSTERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

struct RackSpec {
  std::string name;
  std::string pod;
  int nodes = 0;
  double congestion = 0;  // of every node in the rack
};

weft::v1::ClusterSnapshot MakeCluster(absl::Span<const RackSpec> racks, int gpus = 8,
                                      int nics = 8);

// The node called `name`; aborts the test binary when there is none.
weft::v1::SnapshotNode* MutableNode(weft::v1::ClusterSnapshot* snapshot,
                                    absl::string_view name);

// `nodes` taken by job `job_id`.
weft::v1::Occupancy OccupancyOf(const std::vector<std::string>& nodes,
                                absl::string_view job_id = "other-job");

// A ring all-reduce job of `nodes` nodes, gradient_bytes per rank.
weft::v1::PlacementRequest RingJob(absl::string_view job_id, uint32_t nodes,
                                   uint64_t gradient_bytes = 1 << 30);

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_TEST_CLUSTERS_H_
