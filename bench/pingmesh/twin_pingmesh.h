// The fabric twin seen through pingmesh's types: the inventory a controller would hold
// (nodes "gpu-0001" in racks, NICs "mlx5_<i>" on their rail and leaf) and a PathResolver
// that answers with the twin's own ECMP hash (sim::Fabric::EcmpPath over the healthy
// fabric: what the controller knows from the topology). The evaluation in
// evaluation.h drives pingmesh's pinglists and localiser with it.
//
// Not thread-safe (EcmpPath caches distances in the Fabric).
#ifndef WEFT_BENCH_PINGMESH_TWIN_PINGMESH_H_
#define WEFT_BENCH_PINGMESH_TWIN_PINGMESH_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "pingmesh/path_resolver.h"
#include "pingmesh/pinglist.h"
#include "sim/fabric.h"

namespace weft::bench {

std::string TwinNodeName(int node);   // gpu-0001 for node 1
std::string TwinNicName(int index);   // mlx5_<index>

class TwinResolver : public pingmesh::PathResolver {
 public:
  // `fabric` must outlive the resolver.
  explicit TwinResolver(sim::Fabric* fabric);

  absl::StatusOr<pingmesh::ProbePath> Resolve(const pingmesh::ProbeKey& key) override;
  const pingmesh::LinkInfo& Link(int id) const override { return links_[id]; }

  // NotFound for a name the twin does not have.
  absl::StatusOr<int> NicId(const std::string& node, const std::string& nic) const;
  // "gpu-0001/mlx5_0" for a NIC, the switch's name for a switch.
  const std::string& DeviceName(const sim::Vertex& vertex) const;

 private:
  sim::Fabric* fabric_;
  std::vector<pingmesh::LinkInfo> links_;
  std::vector<std::string> nic_names_;
  absl::flat_hash_map<std::string, int> nic_ids_;
};

// Nodes in racks of `nodes_per_rack` (consecutive node ids; a rail-optimised group is a
// rack), every NIC on its leaf with its index as the rail; a leaf's uplinks are its links
// to spines.
pingmesh::FabricInventory TwinInventory(const sim::Fabric& fabric, int nodes_per_rack);

}  // namespace weft::bench

#endif  // WEFT_BENCH_PINGMESH_TWIN_PINGMESH_H_
