#include "placement/topology.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/yaml_proto.h"

namespace weft::placement {
namespace {

using weft::v1::ClusterSnapshot;
using weft::v1::SnapshotNode;

absl::Status NodeError(int position, const SnapshotNode& node, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("nodes[", position, "] '", node.name(),
                                                 "': ", problem));
}

absl::StatusOr<TopoNode> Summarize(int position, const SnapshotNode& in) {
  TopoNode out;
  out.name = in.name();
  out.healthy = !in.has_healthy() || in.healthy();
  out.drained = in.drained();
  if (!(in.congestion() >= 0 && in.congestion() <= 1)) {
    return NodeError(position, in,
                     absl::StrCat("congestion ", in.congestion(),
                                  " is out of range; accepted: a number from 0 to 1"));
  }
  out.congestion = in.congestion();
  out.socket_ifname = in.socket_ifname();
  out.gpu_count = in.gpus_size() > 0 ? in.gpus_size() : static_cast<int>(in.gpu_count());
  out.nic_count = in.nics_size();
  return out;
}

absl::StatusOr<NodeHardware> ParseHardware(int position, const SnapshotNode& in) {
  NodeHardware out;
  // Nodes have a handful of NICs: linear lookups beat hashing here. `hint` is where
  // the device usually is (GPU i next to NIC i).
  auto find_nic = [&out](absl::string_view device, size_t hint) {
    const size_t n = out.nics.size();
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (hint + k) % n;
      if (out.nics[i].device == device) return static_cast<int>(i);
    }
    return -1;
  };
  out.nics.reserve(in.nics_size());
  for (const auto& nic : in.nics()) {
    if (nic.device().empty()) return NodeError(position, in, "a NIC has no device name");
    if (find_nic(nic.device(), 0) >= 0) {
      return NodeError(position, in, absl::StrCat("NIC '", nic.device(), "' is listed twice"));
    }
    TopoNic t;
    t.device = nic.device();
    t.port = nic.port() == 0 ? 1 : nic.port();
    t.netdev = nic.netdev();
    if (nic.has_roce_v2_gid_index()) t.roce_v2_gid_index = nic.roce_v2_gid_index();
    out.nics.push_back(std::move(t));
  }
  const int nic_count = static_cast<int>(out.nics.size());

  if (in.gpus_size() > 0) {
    out.gpus.reserve(in.gpus_size());
    for (int g = 0; g < in.gpus_size(); ++g) {
      const auto& gpu = in.gpus(g);
      TopoGpu t;
      t.index = gpu.index();
      if (!gpu.closest_nic().empty()) {
        t.nic = find_nic(gpu.closest_nic(), out.nics.empty() ? 0 : g % out.nics.size());
        if (t.nic < 0) {
          return NodeError(position, in,
                           absl::StrCat("GPU ", gpu.index(), " names closest_nic '",
                                        gpu.closest_nic(), "', which is not one of its NICs"));
        }
      }
      out.gpus.push_back(t);
    }
    std::sort(out.gpus.begin(), out.gpus.end(),
              [](const TopoGpu& a, const TopoGpu& b) { return a.index < b.index; });
    for (size_t i = 1; i < out.gpus.size(); ++i) {
      if (out.gpus[i].index == out.gpus[i - 1].index) {
        return NodeError(position, in,
                         absl::StrCat("GPU ", out.gpus[i].index, " is listed twice"));
      }
    }
  } else {
    out.gpus.reserve(in.gpu_count());
    for (uint32_t i = 0; i < in.gpu_count(); ++i) out.gpus.push_back(TopoGpu{i, -1});
  }
  // GPUs without a closest NIC use the NIC of their rail: the i-th GPU, NIC i mod n.
  for (size_t i = 0; i < out.gpus.size(); ++i) {
    if (out.gpus[i].nic < 0 && nic_count > 0) out.gpus[i].nic = static_cast<int>(i) % nic_count;
  }
  return out;
}

}  // namespace

absl::StatusOr<Topology> Topology::Build(const ClusterSnapshot& snapshot) {
  return BuildInternal(snapshot, /*view=*/false);
}

absl::StatusOr<Topology> Topology::BuildView(const ClusterSnapshot& snapshot) {
  return BuildInternal(snapshot, /*view=*/true);
}

absl::StatusOr<NodeHardware> Topology::Hardware(NodeId id) const {
  if (view_ == nullptr) return hardware_[id];
  return ParseHardware(id, view_->nodes(id));
}

absl::StatusOr<Topology> Topology::BuildInternal(const ClusterSnapshot& snapshot, bool view) {
  Topology topo;
  topo.nodes_.reserve(snapshot.nodes_size());
  topo.node_by_name_.reserve(snapshot.nodes_size());
  if (view) {
    topo.view_ = &snapshot;
  } else {
    topo.hardware_.reserve(snapshot.nodes_size());
  }
  absl::flat_hash_map<std::string, RackId> rack_by_name;
  absl::flat_hash_map<std::string, PodId> pod_by_name;
  std::vector<double> rack_congestion_sum;

  for (int i = 0; i < snapshot.nodes_size(); ++i) {
    const SnapshotNode& in = snapshot.nodes(i);
    if (in.name().empty()) return NodeError(i, in, "the node has no name");
    if (in.rack().empty()) {
      return NodeError(i, in, "the node has no rack; placement needs every node's rack");
    }
    auto [name_it, inserted] =
        topo.node_by_name_.emplace(in.name(), static_cast<NodeId>(topo.nodes_.size()));
    if (!inserted) {
      return NodeError(i, in, absl::StrCat("the name repeats nodes[", name_it->second, "]"));
    }
    ASSIGN_OR_RETURN(TopoNode node, Summarize(i, in));
    if (!view) {
      ASSIGN_OR_RETURN(NodeHardware hardware, ParseHardware(i, in));
      topo.hardware_.push_back(std::move(hardware));
    }

    // Snapshots list a rack's nodes together: the previous node's rack and pod are the
    // likely answer, and skip two string hashes.
    PodId pod;
    if (i > 0 && in.pod() == snapshot.nodes(i - 1).pod()) {
      pod = topo.nodes_.back().pod;
    } else {
      auto [pod_it, new_pod] =
          pod_by_name.emplace(in.pod(), static_cast<PodId>(topo.pods_.size()));
      if (new_pod) topo.pods_.push_back(TopoPod{in.pod(), {}});
      pod = pod_it->second;
    }
    RackId rack;
    if (i > 0 && in.rack() == snapshot.nodes(i - 1).rack()) {
      rack = topo.nodes_.back().rack;
    } else {
      auto [rack_it, new_rack] =
          rack_by_name.emplace(in.rack(), static_cast<RackId>(topo.racks_.size()));
      if (new_rack) {
        topo.racks_.push_back(TopoRack{in.rack(), pod, {}, 0});
        topo.pods_[pod].racks.push_back(rack_it->second);
        rack_congestion_sum.push_back(0);
      }
      rack = rack_it->second;
    }
    if (topo.racks_[rack].pod != pod) {
      return NodeError(i, in,
                       absl::StrCat("rack '", in.rack(), "' is in pod '",
                                    topo.pods_[topo.racks_[rack].pod].name,
                                    "' but this node says pod '", in.pod(),
                                    "'; a rack belongs to one pod"));
    }
    node.rack = rack;
    node.pod = pod;
    topo.racks_[rack].nodes.push_back(static_cast<NodeId>(topo.nodes_.size()));
    rack_congestion_sum[rack] += node.congestion;
    topo.nodes_.push_back(std::move(node));
  }
  for (size_t r = 0; r < topo.racks_.size(); ++r) {
    topo.racks_[r].congestion = rack_congestion_sum[r] / topo.racks_[r].nodes.size();
  }
  if (!topo.nodes_.empty()) {
    const int gpus = topo.nodes_.front().gpu_count;
    const bool uniform = std::all_of(topo.nodes_.begin(), topo.nodes_.end(),
                                     [&](const TopoNode& n) { return n.gpu_count == gpus; });
    if (uniform) topo.uniform_gpu_count_ = static_cast<int>(gpus);
  }
  return topo;
}

std::optional<NodeId> Topology::FindNode(absl::string_view name) const {
  auto it = node_by_name_.find(name);
  if (it == node_by_name_.end()) return std::nullopt;
  return it->second;
}

namespace {

absl::StatusOr<ClusterSnapshot> ExpandStaticTopology(weft::v1::StaticTopology topology,
                                                     absl::string_view source_name) {
  const SnapshotNode& defaults = topology.node_defaults();
  ClusterSnapshot snapshot;
  for (SnapshotNode& node : *topology.mutable_nodes()) {
    if (node.gpus_size() == 0 && node.gpu_count() == 0) {
      *node.mutable_gpus() = defaults.gpus();
      node.set_gpu_count(defaults.gpu_count());
    }
    if (node.nics_size() == 0) *node.mutable_nics() = defaults.nics();
    if (node.socket_ifname().empty()) node.set_socket_ifname(defaults.socket_ifname());
    *snapshot.add_nodes() = std::move(node);
  }
  absl::StatusOr<Topology> check = Topology::Build(snapshot);
  if (!check.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": ", check.status().message()));
  }
  return snapshot;
}

}  // namespace

absl::StatusOr<ClusterSnapshot> ParseStaticTopology(absl::string_view yaml,
                                                    absl::string_view source_name) {
  weft::v1::StaticTopology topology;
  RETURN_IF_ERROR(MergeYamlString(yaml, source_name, &topology));
  return ExpandStaticTopology(std::move(topology), source_name);
}

absl::StatusOr<ClusterSnapshot> LoadStaticTopology(absl::string_view path) {
  weft::v1::StaticTopology topology;
  RETURN_IF_ERROR(MergeYamlFile(path, &topology));
  return ExpandStaticTopology(std::move(topology), path);
}

}  // namespace weft::placement
