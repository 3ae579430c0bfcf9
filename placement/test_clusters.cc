#include "placement/test_clusters.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::placement {

weft::v1::ClusterSnapshot MakeCluster(absl::Span<const RackSpec> racks, int gpus, int nics) {
  weft::v1::ClusterSnapshot snapshot;
  for (const RackSpec& rack : racks) {
    for (int n = 1; n <= rack.nodes; ++n) {
      weft::v1::SnapshotNode* node = snapshot.add_nodes();
      node->set_name(absl::StrFormat("%s-%02d", rack.name, n));
      node->set_rack(rack.name);
      node->set_pod(rack.pod);
      node->set_healthy(true);
      node->set_congestion(rack.congestion);
      for (int i = 0; i < nics; ++i) {
        weft::v1::SnapshotNic* nic = node->add_nics();
        nic->set_device(absl::StrCat("mlx5_", i));
        nic->set_port(1);
        nic->set_netdev(absl::StrCat("ens", i, "np0"));
        nic->set_roce_v2_gid_index(3);
      }
      for (int g = 0; g < gpus; ++g) {
        weft::v1::SnapshotGpu* gpu = node->add_gpus();
        gpu->set_index(g);
        if (nics > 0) gpu->set_closest_nic(absl::StrCat("mlx5_", g * nics / gpus));
      }
    }
  }
  return snapshot;
}

weft::v1::SnapshotNode* MutableNode(weft::v1::ClusterSnapshot* snapshot,
                                    absl::string_view name) {
  for (auto& node : *snapshot->mutable_nodes()) {
    if (node.name() == name) return &node;
  }
  std::fprintf(stderr, "test cluster has no node '%s'\n", std::string(name).c_str());
  std::abort();
}

weft::v1::Occupancy OccupancyOf(const std::vector<std::string>& nodes,
                                absl::string_view job_id) {
  weft::v1::Occupancy occupancy;
  for (const std::string& node : nodes) {
    auto* entry = occupancy.add_entries();
    entry->set_node(node);
    entry->set_job_id(std::string(job_id));
  }
  return occupancy;
}

weft::v1::PlacementRequest RingJob(absl::string_view job_id, uint32_t nodes,
                                   uint64_t gradient_bytes) {
  weft::v1::PlacementRequest request;
  request.set_job_id(std::string(job_id));
  request.set_node_count(nodes);
  request.set_pattern(weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE);
  request.set_gradient_bytes(gradient_bytes);
  return request;
}

}  // namespace weft::placement
