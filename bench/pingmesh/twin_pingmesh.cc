#include "bench/pingmesh/twin_pingmesh.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::bench {

std::string TwinNodeName(int node) { return absl::StrFormat("gpu-%04d", node); }
std::string TwinNicName(int index) { return absl::StrCat("mlx5_", index); }

TwinResolver::TwinResolver(sim::Fabric* fabric) : fabric_(fabric) {
  for (size_t i = 0; i < fabric->nics().size(); ++i) {
    const sim::Nic& nic = fabric->nics()[i];
    nic_names_.push_back(absl::StrCat(TwinNodeName(nic.node), "/", TwinNicName(nic.index)));
    nic_ids_[nic_names_.back()] = static_cast<int>(i);
  }
  for (const sim::Link& link : fabric->links()) {
    pingmesh::LinkInfo info;
    info.from = DeviceName(link.from);
    info.to = DeviceName(link.to);
    info.name = absl::StrCat(info.from, "->", info.to);
    info.from_switch = link.from.kind == sim::Vertex::Kind::kSwitch;
    info.to_switch = link.to.kind == sim::Vertex::Kind::kSwitch;
    links_.push_back(std::move(info));
  }
}

const std::string& TwinResolver::DeviceName(const sim::Vertex& vertex) const {
  return vertex.kind == sim::Vertex::Kind::kNic ? nic_names_[vertex.id]
                                                : fabric_->switches()[vertex.id].name;
}

absl::StatusOr<int> TwinResolver::NicId(const std::string& node, const std::string& nic) const {
  auto it = nic_ids_.find(absl::StrCat(node, "/", nic));
  if (it == nic_ids_.end()) {
    return absl::NotFoundError(absl::StrCat("twin has no NIC ", node, "/", nic));
  }
  return it->second;
}

absl::StatusOr<pingmesh::ProbePath> TwinResolver::Resolve(const pingmesh::ProbeKey& key) {
  absl::StatusOr<int> src = NicId(key.src_node, key.src_nic);
  if (!src.ok()) return src.status();
  absl::StatusOr<int> dst = NicId(key.dst_node, key.dst_nic);
  if (!dst.ok()) return dst.status();
  pingmesh::ProbePath path;
  absl::StatusOr<std::vector<int>> forward = fabric_->EcmpPath({*src, *dst, key.udp_src_port});
  if (!forward.ok()) return forward.status();
  absl::StatusOr<std::vector<int>> back = fabric_->EcmpPath({*dst, *src, key.udp_src_port});
  if (!back.ok()) return back.status();
  path.forward = *std::move(forward);
  path.back = *std::move(back);
  return path;
}

pingmesh::FabricInventory TwinInventory(const sim::Fabric& fabric, int nodes_per_rack) {
  pingmesh::FabricInventory inventory;
  for (size_t s = 0; s < fabric.switches().size(); ++s) {
    const sim::Switch& sw = fabric.switches()[s];
    if (sw.tier != sim::SwitchTier::kLeaf) continue;
    int uplinks = 0;
    for (const sim::Link& link : fabric.links()) {
      if (link.from.kind == sim::Vertex::Kind::kSwitch && link.from.id == static_cast<int>(s) &&
          link.to.kind == sim::Vertex::Kind::kSwitch) {
        ++uplinks;
      }
    }
    inventory.tors.push_back({sw.name, std::max(uplinks, 1)});
  }
  inventory.nodes.resize(fabric.num_nodes());
  for (int n = 0; n < fabric.num_nodes(); ++n) {
    inventory.nodes[n].name = TwinNodeName(n);
    inventory.nodes[n].rack = absl::StrCat("rack", n / nodes_per_rack);
  }
  for (const sim::Nic& nic : fabric.nics()) {
    inventory.nodes[nic.node].nics.push_back(
        {TwinNicName(nic.index), nic.index, fabric.switches()[nic.leaf].name, nic.bps});
  }
  return inventory;
}

}  // namespace weft::bench
