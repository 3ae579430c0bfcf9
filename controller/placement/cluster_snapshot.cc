#include "controller/placement/cluster_snapshot.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "topology/cabling.h"

namespace weft::controller {

using topology::InferRack;
using topology::LldpSwitchName;
using topology::ObservedNic;
using topology::RackInference;
namespace {

using weft::v1::NodeStatus;

constexpr absl::string_view kIpv4MappedPrefix = "0000:0000:0000:0000:0000:ffff:";
constexpr absl::string_view kLinkLocalPrefix = "fe80:";

// RDMA NICs that are not Ethernet (an InfiniBand port) carry no RoCE traffic.
bool IsRoceNic(const weft::v1::Nic& nic) {
  return nic.link_layer().empty() || absl::EqualsIgnoreCase(nic.link_layer(), "Ethernet");
}

double Ratio(double value, double full_scale) {
  if (full_scale <= 0) return value > 0 ? 1 : 0;
  return value / full_scale;
}

}  // namespace

CongestionScale CongestionScale::FromThresholds(const HealthThresholds& thresholds) {
  CongestionScale scale;
  scale.pfc_pause_share = thresholds.pfc_pause_share;
  scale.ecn_mark_ratio = thresholds.ecn_mark_ratio;
  scale.ecn_min_rcv_packets_per_s = thresholds.ecn_min_rcv_packets_per_s;
  return scale;
}

double NicCongestion(const weft::v1::NicSample& sample, const CongestionScale& scale) {
  const NicReading r = ReadingFromSample(sample, absl::UnixEpoch());
  if (!r.rates_valid || r.has_error) return 0;
  double score = 0;
  if (r.pfc.has_pfc) score = Ratio(r.pfc.worst(), scale.pfc_pause_share);
  if (r.ecn_marked_per_s && r.rcv_packets_per_s && *r.rcv_packets_per_s > 0 &&
      *r.rcv_packets_per_s >= scale.ecn_min_rcv_packets_per_s) {
    score = std::max(score, Ratio(*r.ecn_marked_per_s / *r.rcv_packets_per_s,
                                  scale.ecn_mark_ratio));
  }
  return std::clamp(score, 0.0, 1.0);
}

double NodeCongestion(const NodeStatus& node, const CongestionScale& scale) {
  if (!node.reporting()) return 0;
  double score = 0;
  for (const weft::v1::NicStatus& nic : node.nics()) {
    if (!nic.has_latest()) continue;
    score = std::max(score, NicCongestion(nic.latest(), scale));
  }
  return score;
}

std::optional<uint32_t> RoceV2GidIndex(const weft::v1::Nic& nic) {
  std::optional<uint32_t> ipv4, global;
  for (const weft::v1::GidEntry& gid : nic.gids()) {
    if (gid.type() != weft::v1::GID_TYPE_ROCE_V2) continue;
    if (!nic.netdev().empty() && !gid.netdev().empty() && gid.netdev() != nic.netdev()) {
      continue;
    }
    const std::string lower = absl::AsciiStrToLower(gid.gid());
    if (absl::StartsWith(lower, kIpv4MappedPrefix)) {
      if (!ipv4 || gid.index() < *ipv4) ipv4 = gid.index();
    } else if (!absl::StartsWith(lower, kLinkLocalPrefix) && !gid.gid().empty()) {
      if (!global || gid.index() < *global) global = gid.index();
    }
  }
  return ipv4 ? ipv4 : global;
}

namespace {

// The RoCE NICs of a node as the snapshot lists them: a device repeated (a second port)
// keeps its first entry.
std::vector<const weft::v1::Nic*> SnapshotNics(const weft::v1::NodeInfo& info) {
  std::vector<const weft::v1::Nic*> nics;
  absl::flat_hash_set<std::string> devices;
  for (const weft::v1::Nic& nic : info.nics()) {
    if (IsRoceNic(nic) && devices.insert(nic.device()).second) nics.push_back(&nic);
  }
  return nics;
}

// The registered rack, else the one LLDP suggests; "" when neither.
std::string EffectiveRack(const weft::v1::NodeInfo& info,
                          const std::vector<const weft::v1::Nic*>& nics) {
  if (!info.rack().empty()) return info.rack();
  std::vector<ObservedNic> observed;
  for (const weft::v1::Nic* nic : nics) {
    observed.push_back({nic->device(), LldpSwitchName(nic->lldp_neighbor()),
                        nic->lldp_neighbor().port_id()});
  }
  std::optional<RackInference> inferred = InferRack(observed);
  return inferred ? inferred->rack : "";
}

}  // namespace

InventorySnapshot SnapshotFromNodes(const std::vector<NodeStatus>& nodes,
                                    const CongestionScale& scale, absl::Time now) {
  std::vector<std::vector<const weft::v1::Nic*>> nics_of_node;
  std::vector<std::string> rack_of_node;
  nics_of_node.reserve(nodes.size());
  rack_of_node.reserve(nodes.size());
  for (const NodeStatus& node : nodes) {
    nics_of_node.push_back(SnapshotNics(node.info()));
    rack_of_node.push_back(EffectiveRack(node.info(), nics_of_node.back()));
  }
  // Rack names registered (or inferred) under more than one pod are qualified with
  // their pod.
  std::map<std::string, std::set<std::string>> pods_of_rack;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!rack_of_node[i].empty()) pods_of_rack[rack_of_node[i]].insert(nodes[i].info().pod());
  }

  InventorySnapshot out;
  out.snapshot.set_taken_at_unix_s(absl::ToUnixSeconds(now));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeStatus& status = nodes[i];
    const weft::v1::NodeInfo& info = status.info();
    const std::string& rack = rack_of_node[i];
    if (rack.empty()) {
      weft::v1::OmittedNode& omitted = out.omitted.emplace_back();
      omitted.set_node(info.name());
      omitted.set_reason(
          "no rack, and no LLDP neighbor to infer one from; start its agent with --rack (or "
          "set rack in agent.yaml) so placement and topology exports can use it");
      continue;
    }
    weft::v1::SnapshotNode* node = out.snapshot.add_nodes();
    node->set_name(info.name());
    node->set_rack(pods_of_rack[rack].size() > 1 ? absl::StrCat(info.pod(), "/", rack) : rack);
    node->set_rack_from_lldp(info.rack().empty());
    node->set_pod(info.pod());
    node->set_drained(status.state() == weft::v1::NODE_STATE_DRAINED);
    node->set_healthy(status.reporting() && status.health() == weft::v1::NODE_STATE_HEALTHY);
    node->set_congestion(NodeCongestion(status, scale));

    absl::flat_hash_set<std::string> devices;
    for (const weft::v1::Nic* nic : nics_of_node[i]) {
      devices.insert(nic->device());
      weft::v1::SnapshotNic* out_nic = node->add_nics();
      out_nic->set_device(nic->device());
      out_nic->set_port(nic->port());
      out_nic->set_netdev(nic->netdev());
      if (std::optional<uint32_t> gid = RoceV2GidIndex(*nic)) {
        out_nic->set_roce_v2_gid_index(*gid);
      }
      out_nic->set_lldp_switch(LldpSwitchName(nic->lldp_neighbor()));
      out_nic->set_lldp_port(nic->lldp_neighbor().port_id());
    }
    absl::flat_hash_set<uint32_t> gpu_indices;
    for (const weft::v1::Gpu& gpu : info.gpus()) {
      if (!gpu_indices.insert(gpu.index()).second) continue;
      weft::v1::SnapshotGpu* out_gpu = node->add_gpus();
      out_gpu->set_index(gpu.index());
      if (devices.contains(gpu.closest_nic())) out_gpu->set_closest_nic(gpu.closest_nic());
    }
  }
  return out;
}

}  // namespace weft::controller
