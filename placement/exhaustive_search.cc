#include "placement/exhaustive_search.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "common/status_macros.h"

namespace weft::placement {
namespace {

struct Walk {
  const Topology& topo;
  const JobShape& shape;
  const TrafficBytes& bytes;
  int max_racks;
  bool single_pod;
  std::vector<RackId> racks;  // racks with free eligible nodes
  std::vector<int> free;      // free eligible nodes left, by index into racks
  std::vector<int> node_rack, node_pod;
  std::optional<Optimum> best;

  void Visit(int position) {
    if (position == shape.nodes) {
      Score();
      return;
    }
    for (size_t i = 0; i < racks.size(); ++i) {
      if (free[i] == 0) continue;
      --free[i];
      node_rack[position] = racks[i];
      node_pod[position] = topo.rack(racks[i]).pod;
      Visit(position + 1);
      ++free[i];
    }
  }

  void Score() {
    absl::flat_hash_set<int> rack_set(node_rack.begin(), node_rack.end());
    absl::flat_hash_set<int> pod_set(node_pod.begin(), node_pod.end());
    if (max_racks > 0 && static_cast<int>(rack_set.size()) > max_racks) return;
    if (single_pod && pod_set.size() > 1) return;
    const TrafficPrediction traffic = PredictTraffic(shape, bytes, node_rack, node_pod);
    Optimum score{static_cast<int>(rack_set.size()), static_cast<int>(pod_set.size()),
                  traffic.cross_rack_bytes, traffic.cross_pod_bytes};
    if (!best.has_value() || score.Key() < best->Key()) best = score;
  }
};

}  // namespace

absl::StatusOr<Optimum> ExhaustiveOptimum(const Topology& topo,
                                          const weft::v1::Occupancy& occupancy,
                                          const weft::v1::PlacementRequest& request) {
  ASSIGN_OR_RETURN(const JobShape shape,
                   ResolveJobShape(request, static_cast<int>(request.gpus_per_node())));
  const TrafficBytes bytes{request.gradient_bytes(), request.alltoall_bytes(),
                           request.activation_bytes()};
  absl::flat_hash_set<std::string> taken(request.constraints().exclude_nodes().begin(),
                                         request.constraints().exclude_nodes().end());
  for (const auto& entry : occupancy.entries()) taken.insert(entry.node());
  const auto& c = request.constraints();

  Walk walk{topo, shape, bytes, static_cast<int>(c.max_racks()), c.single_pod(), {}, {},
            std::vector<int>(shape.nodes), std::vector<int>(shape.nodes), std::nullopt};
  for (RackId r = 0; r < static_cast<RackId>(topo.racks().size()); ++r) {
    int free = 0;
    for (NodeId id : topo.rack(r).nodes) {
      const TopoNode& n = topo.node(id);
      const bool ok = n.healthy && !n.drained && !taken.contains(n.name) &&
                      n.gpu_count >= shape.gpus_per_node &&
                      (shape.nodes == 1 || n.nic_count > 0) &&
                      (!c.has_max_congestion() || n.congestion <= c.max_congestion());
      free += ok ? 1 : 0;
    }
    if (free > 0) {
      walk.racks.push_back(r);
      walk.free.push_back(free);
    }
  }
  walk.Visit(0);
  if (!walk.best.has_value()) {
    return absl::ResourceExhaustedError("no placement satisfies the request");
  }
  return *walk.best;
}

}  // namespace weft::placement
