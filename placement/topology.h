// Topology: the cluster model placement works on — nodes grouped into racks (one ToR
// switch each) and racks into pods (spine groups), with each node's GPUs, NICs, health
// and congestion. Built once from a ClusterSnapshot (which the controller assembles from
// its inventory, or an offline tool loads from a static topology YAML with
// LoadStaticTopology), then read by the engine and the traffic model.
//
// Nodes, racks and pods are addressed by dense indices (NodeId, RackId, PodId) into
// vectors, so the engine's inner loops touch no strings. A NodeId is the node's position
// in the snapshot; racks and pods are numbered in order of first appearance; a rack's
// nodes keep snapshot order.
//
// Immutable after Build: safe to share between threads. A Topology from BuildView
// reads the snapshot it was built from, which must stay alive and unchanged.
//
// Example:
//   ASSIGN_OR_RETURN(weft::v1::ClusterSnapshot snapshot,
//                    LoadStaticTopology("/etc/weft/topology.yaml"));
//   ASSIGN_OR_RETURN(Topology topology, Topology::Build(snapshot));
#ifndef WEFT_PLACEMENT_TOPOLOGY_H_
#define WEFT_PLACEMENT_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

using NodeId = int;
using RackId = int;
using PodId = int;

struct TopoNic {
  std::string device;   // "mlx5_0"
  uint32_t port = 1;    // 1-based
  std::string netdev;   // "" when unknown
  std::optional<uint32_t> roce_v2_gid_index;
};

struct TopoGpu {
  uint32_t index = 0;
  int nic = -1;  // index into TopoNode::nics of the closest NIC; -1 when the node has none
};

// A node's GPUs and NICs: read only for the nodes a placement uses.
struct NodeHardware {
  std::vector<TopoGpu> gpus;  // sorted by index
  std::vector<TopoNic> nics;
};

struct TopoNode {
  std::string name;
  RackId rack = 0;
  PodId pod = 0;
  int gpu_count = 0;
  int nic_count = 0;
  bool healthy = true;
  bool drained = false;
  double congestion = 0;  // 0..1
  std::string socket_ifname;
};

struct TopoRack {
  std::string name;
  PodId pod = 0;
  std::vector<NodeId> nodes;
  // Mean congestion of all the rack's nodes (busy or free): a proxy for the load on
  // its ToR and uplinks.
  double congestion = 0;
};

struct TopoPod {
  std::string name;
  std::vector<RackId> racks;
};

class Topology {
 public:
  // Validates and indexes `snapshot`. INVALID_ARGUMENT naming the node (by position and
  // name) when a node has no name or rack, a name repeats, a rack appears in two pods,
  // a NIC device repeats within a node, a GPU index repeats, a GPU's closest_nic names
  // no NIC of its node, or congestion is outside 0..1.
  static absl::StatusOr<Topology> Build(const weft::v1::ClusterSnapshot& snapshot);

  // Like Build, but reads each node's GPUs and NICs only when Hardware() asks for them,
  // from `snapshot`, which must outlive the Topology. Building skips the GPU and NIC
  // messages of every node (most of a snapshot), so it suits one-shot placements; GPU
  // and NIC errors then surface from Hardware(), for the nodes actually used.
  static absl::StatusOr<Topology> BuildView(const weft::v1::ClusterSnapshot& snapshot);

  const std::vector<TopoNode>& nodes() const { return nodes_; }
  const std::vector<TopoRack>& racks() const { return racks_; }
  const std::vector<TopoPod>& pods() const { return pods_; }
  const TopoNode& node(NodeId id) const { return nodes_[id]; }
  const TopoRack& rack(RackId id) const { return racks_[id]; }
  const TopoPod& pod(PodId id) const { return pods_[id]; }

  // The GPUs and NICs of node `id`. Always OK for a Topology from Build; from BuildView,
  // INVALID_ARGUMENT (as Build would have said) when the node's GPUs or NICs are
  // inconsistent.
  absl::StatusOr<NodeHardware> Hardware(NodeId id) const;

  // The node called `name`, or nullopt.
  std::optional<NodeId> FindNode(absl::string_view name) const;

  // The GPU count every node has, or nullopt when nodes differ (or there are none).
  std::optional<int> UniformGpuCount() const { return uniform_gpu_count_; }

 private:
  Topology() = default;

  static absl::StatusOr<Topology> BuildInternal(const weft::v1::ClusterSnapshot& snapshot,
                                                bool view);

  std::vector<TopoNode> nodes_;
  // From Build: every node's hardware. From BuildView: empty, and view_ is set.
  std::vector<NodeHardware> hardware_;
  const weft::v1::ClusterSnapshot* view_ = nullptr;
  std::vector<TopoRack> racks_;
  std::vector<TopoPod> pods_;
  absl::flat_hash_map<std::string, NodeId> node_by_name_;
  std::optional<int> uniform_gpu_count_;
};

// Parses a static topology (weft.v1.StaticTopology as YAML, loaded strictly with
// common/yaml_proto.h) and expands `node_defaults` into every node that omits gpus
// (and gpu_count), nics or socket_ifname. Errors name `source_name`, line and column;
// the result is also checked with Topology::Build, whose errors are prefixed with
// `source_name`.
//
// Example file:
//   node_defaults:
//     gpu_count: 8
//     nics: [{device: mlx5_0, netdev: ens1np0, roce_v2_gid_index: 3}, ...]
//   nodes:
//     - {name: gpu-a01, rack: a, pod: p1}
//     - {name: gpu-a02, rack: a, pod: p1, drained: true}
absl::StatusOr<weft::v1::ClusterSnapshot> ParseStaticTopology(
    absl::string_view yaml, absl::string_view source_name);

// Reads `path` and parses it as ParseStaticTopology does. NOT_FOUND when unreadable.
absl::StatusOr<weft::v1::ClusterSnapshot> LoadStaticTopology(absl::string_view path);

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_TOPOLOGY_H_
