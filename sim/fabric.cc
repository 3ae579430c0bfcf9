#include "sim/fabric.h"

#include <cmath>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

absl::Status CheckRange(const char* builder, const char* name, double value, double low,
                        double high, const char* note = "") {
  if (std::isfinite(value) && value >= low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(builder, ": ", name, " = ", value,
                                                 " is out of range: accepted [", low, ", ", high,
                                                 "]", note));
}

constexpr int kMaxNics = 1 << 20;
constexpr char kNicNote[] = " (NICs of 100-400 Gb/s; 40 Gb/s for the CoNEXT'16 checks)";

// The checks both builders share: the NICs, the uplinks and spines, the link delays.
// Sets *spines to the spine count (0 means one per uplink).
absl::Status CheckCommon(const char* who, const char* uplinks_name, int uplinks, int spines_option,
                         int nics_per_node, double nic_bps, double oversubscription,
                         double nic_link_delay_s, double fabric_link_delay_s, double total_nics,
                         int* spines) {
  for (absl::Status s : {
           CheckRange(who, "nics_per_node", nics_per_node, 1, 16),
           CheckRange(who, "nic_bps", nic_bps, 1e9, 1.6e12, kNicNote),
           CheckRange(who, uplinks_name, uplinks, 1, 1024),
           CheckRange(who, "spines", spines_option, 0, 1024, " (0: one per uplink)"),
           CheckRange(who, "oversubscription", oversubscription, 1, 64, " (1 = non-blocking)"),
           CheckRange(who, "nic_link_delay_s", nic_link_delay_s, 0, 1e-3),
           CheckRange(who, "fabric_link_delay_s", fabric_link_delay_s, 0, 1e-3),
           CheckRange(who, "the NIC count", total_nics, 1, kMaxNics),
       }) {
    if (!s.ok()) return s;
  }
  *spines = spines_option == 0 ? uplinks : spines_option;
  if (*spines > uplinks) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": spines = ", *spines, " exceeds ",
                                                   uplinks_name, " = ", uplinks, ": accepted [1, ",
                                                   uplinks_name, "] (every leaf reaches every spine)"));
  }
  return absl::OkStatus();
}

uint64_t Mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

uint64_t EcmpHash(uint32_t src_ipv4, uint32_t dst_ipv4, uint16_t udp_src_port, int switch_id) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h = 0xcbf29ce484222325ULL;
  auto fold = [&](uint8_t byte) { h = (h ^ byte) * kPrime; };
  for (int shift = 24; shift >= 0; shift -= 8) fold(static_cast<uint8_t>(switch_id >> shift));
  for (int shift = 24; shift >= 0; shift -= 8) fold(static_cast<uint8_t>(src_ipv4 >> shift));
  for (int shift = 24; shift >= 0; shift -= 8) fold(static_cast<uint8_t>(dst_ipv4 >> shift));
  fold(kUdpProtocol);
  fold(static_cast<uint8_t>(udp_src_port >> 8));
  fold(static_cast<uint8_t>(udp_src_port));
  fold(static_cast<uint8_t>(kRoceV2UdpPort >> 8));
  fold(static_cast<uint8_t>(kRoceV2UdpPort));
  return Mix64(h);
}

uint32_t NicAddress(int nic) { return (10u << 24) + static_cast<uint32_t>(nic) + 1; }

int Fabric::AddNic(int node, int index, double bps) {
  Nic nic;
  nic.node = node;
  nic.index = index;
  nic.bps = bps;
  nic.ipv4 = NicAddress(static_cast<int>(nics_.size()));
  nics_.push_back(nic);
  return static_cast<int>(nics_.size()) - 1;
}

int Fabric::AddSwitch(SwitchTier tier, std::string name) {
  switches_.push_back(Switch{tier, std::move(name)});
  switch_out_links_.emplace_back();
  distance_cache_.emplace_back();
  return static_cast<int>(switches_.size()) - 1;
}

int Fabric::AddCable(Vertex a, Vertex b, double capacity_bps, double propagation_delay_s) {
  const int id = static_cast<int>(links_.size());
  links_.push_back(Link{a, b, capacity_bps, propagation_delay_s});
  links_.push_back(Link{b, a, capacity_bps, propagation_delay_s});
  for (int k : {id, id + 1}) {
    const Link& link = links_[k];
    if (link.from.kind == Vertex::Kind::kSwitch) {
      switch_out_links_[link.from.id].push_back(k);
    } else {
      Nic& nic = nics_[link.from.id];
      nic.uplink = k;
      nic.leaf = link.to.id;
    }
    if (link.to.kind == Vertex::Kind::kNic) nics_[link.to.id].downlink = k;
  }
  // Distances change with every switch-to-switch cable.
  for (std::vector<int>& d : distance_cache_) d.clear();
  return id;
}

const std::vector<int>& Fabric::DistancesTo(int dst_switch) {
  std::vector<int>& dist = distance_cache_[dst_switch];
  if (dist.empty()) dist = Distances(dst_switch, nullptr);
  return dist;
}

std::vector<int> Fabric::Distances(int dst_switch, const std::vector<bool>* link_down) const {
  // Cables are symmetric, so hops to dst equal hops from dst.
  std::vector<int> dist(switches_.size(), -1);
  std::deque<int> queue = {dst_switch};
  dist[dst_switch] = 0;
  while (!queue.empty()) {
    const int s = queue.front();
    queue.pop_front();
    for (int k : switch_out_links_[s]) {
      const Vertex& to = links_[k].to;
      if (to.kind != Vertex::Kind::kSwitch || dist[to.id] >= 0) continue;
      if (link_down != nullptr && (*link_down)[k]) continue;
      dist[to.id] = dist[s] + 1;
      queue.push_back(to.id);
    }
  }
  return dist;
}

absl::StatusOr<std::vector<int>> Fabric::EcmpPath(const FlowTuple& flow) {
  return Walk(flow, nullptr);
}

absl::StatusOr<std::vector<int>> Fabric::EcmpPath(const FlowTuple& flow,
                                                  const std::vector<bool>& link_down) {
  return Walk(flow, &link_down);
}

absl::StatusOr<std::vector<int>> Fabric::Walk(const FlowTuple& flow,
                                              const std::vector<bool>* link_down) {
  const int n = static_cast<int>(nics_.size());
  for (const auto& [name, nic] : {std::pair{"src_nic", flow.src_nic}, {"dst_nic", flow.dst_nic}}) {
    if (nic < 0 || nic >= n) {
      return absl::InvalidArgumentError(absl::StrCat("flow ", name, " = ", nic,
                                                     " is out of range: accepted [0, ", n - 1, "]"));
    }
  }
  if (flow.src_nic == flow.dst_nic) {
    return absl::InvalidArgumentError(
        absl::StrCat("flow from NIC ", flow.src_nic, " to itself: src_nic must differ from dst_nic"));
  }
  const Nic& src = nics_[flow.src_nic];
  const Nic& dst = nics_[flow.dst_nic];
  if (src.uplink < 0 || dst.downlink < 0) {
    return absl::NotFoundError(absl::StrCat("NIC ", src.uplink < 0 ? flow.src_nic : flow.dst_nic,
                                            " is not cabled"));
  }
  auto down = [link_down](int k) { return link_down != nullptr && (*link_down)[k]; };
  if (down(src.uplink) || down(dst.downlink)) {
    return absl::NotFoundError(absl::StrCat("NIC ", down(src.uplink) ? flow.src_nic : flow.dst_nic,
                                            "'s link is down"));
  }
  std::vector<int> uncached;
  if (link_down != nullptr) uncached = Distances(dst.leaf, link_down);
  const std::vector<int>& dist = link_down != nullptr ? uncached : DistancesTo(dst.leaf);
  std::vector<int> path = {src.uplink};
  int at = src.leaf;
  if (dist[at] < 0) {
    return absl::NotFoundError(absl::StrCat("no path from ", switches_[at].name, " to ",
                                            switches_[dst.leaf].name));
  }
  std::vector<int> candidates;
  while (at != dst.leaf) {
    candidates.clear();
    for (int k : switch_out_links_[at]) {
      const Vertex& to = links_[k].to;
      if (to.kind == Vertex::Kind::kSwitch && !down(k) && dist[to.id] == dist[at] - 1) {
        candidates.push_back(k);
      }
    }
    const uint64_t h = EcmpHash(src.ipv4, dst.ipv4, flow.udp_src_port, at);
    const int k = candidates[h % candidates.size()];
    path.push_back(k);
    at = links_[k].to.id;
  }
  path.push_back(dst.downlink);
  return path;
}

double Fabric::PathDelaySeconds(const std::vector<int>& path) const {
  double delay = 0;
  for (int k : path) delay += links_[k].propagation_delay_s;
  return delay;
}

absl::StatusOr<Fabric> BuildLeafSpine(const LeafSpineOptions& o) {
  constexpr char kWho[] = "leaf-spine";
  for (absl::Status s : {CheckRange(kWho, "racks", o.racks, 1, 4096),
                         CheckRange(kWho, "nodes_per_rack", o.nodes_per_rack, 1, 1024)}) {
    if (!s.ok()) return s;
  }
  int spines = 0;
  if (absl::Status s = CheckCommon(
          kWho, "uplinks_per_tor", o.uplinks_per_tor, o.spines, o.nics_per_node, o.nic_bps,
          o.oversubscription, o.nic_link_delay_s, o.fabric_link_delay_s,
          static_cast<double>(o.racks) * o.nodes_per_rack * o.nics_per_node, &spines);
      !s.ok()) {
    return s;
  }
  const double uplink_bps = o.nodes_per_rack * o.nics_per_node * o.nic_bps /
                            (o.oversubscription * o.uplinks_per_tor);
  Fabric fabric;
  std::vector<int> spine_ids;
  for (int s = 0; s < spines; ++s) {
    spine_ids.push_back(fabric.AddSwitch(SwitchTier::kSpine, absl::StrCat("spine", s)));
  }
  for (int r = 0; r < o.racks; ++r) {
    const int tor = fabric.AddSwitch(SwitchTier::kLeaf, absl::StrCat("tor", r));
    for (int u = 0; u < o.uplinks_per_tor; ++u) {
      fabric.AddCable({Vertex::Kind::kSwitch, tor}, {Vertex::Kind::kSwitch, spine_ids[u % spines]},
                      uplink_bps, o.fabric_link_delay_s);
    }
    for (int n = 0; n < o.nodes_per_rack; ++n) {
      const int node = fabric.AddNode();
      for (int i = 0; i < o.nics_per_node; ++i) {
        const int nic = fabric.AddNic(node, i, o.nic_bps);
        fabric.AddCable({Vertex::Kind::kNic, nic}, {Vertex::Kind::kSwitch, tor}, o.nic_bps,
                        o.nic_link_delay_s);
      }
    }
  }
  return fabric;
}

absl::StatusOr<Fabric> BuildRailOptimized(const RailOptions& o) {
  constexpr char kWho[] = "rail-optimised";
  for (absl::Status s : {CheckRange(kWho, "nodes", o.nodes, 1, 65536),
                         CheckRange(kWho, "nodes_per_group", o.nodes_per_group, 1, 1024)}) {
    if (!s.ok()) return s;
  }
  int spines = 0;
  if (absl::Status s = CheckCommon(kWho, "uplinks_per_leaf", o.uplinks_per_leaf, o.spines,
                                   o.nics_per_node, o.nic_bps, o.oversubscription,
                                   o.nic_link_delay_s, o.fabric_link_delay_s,
                                   static_cast<double>(o.nodes) * o.nics_per_node, &spines);
      !s.ok()) {
    return s;
  }
  const double uplink_bps =
      o.nodes_per_group * o.nic_bps / (o.oversubscription * o.uplinks_per_leaf);
  Fabric fabric;
  std::vector<int> spine_ids;
  for (int s = 0; s < spines; ++s) {
    spine_ids.push_back(fabric.AddSwitch(SwitchTier::kSpine, absl::StrCat("spine", s)));
  }
  const int groups = (o.nodes + o.nodes_per_group - 1) / o.nodes_per_group;
  for (int g = 0; g < groups; ++g) {
    std::vector<int> rail_leaf;
    for (int i = 0; i < o.nics_per_node; ++i) {
      rail_leaf.push_back(fabric.AddSwitch(SwitchTier::kLeaf, absl::StrCat("rail", i, ".", g)));
      for (int u = 0; u < o.uplinks_per_leaf; ++u) {
        fabric.AddCable({Vertex::Kind::kSwitch, rail_leaf.back()},
                        {Vertex::Kind::kSwitch, spine_ids[u % spines]}, uplink_bps,
                        o.fabric_link_delay_s);
      }
    }
    const int group_nodes = std::min(o.nodes_per_group, o.nodes - g * o.nodes_per_group);
    for (int n = 0; n < group_nodes; ++n) {
      const int node = fabric.AddNode();
      for (int i = 0; i < o.nics_per_node; ++i) {
        const int nic = fabric.AddNic(node, i, o.nic_bps);
        fabric.AddCable({Vertex::Kind::kNic, nic}, {Vertex::Kind::kSwitch, rail_leaf[i]},
                        o.nic_bps, o.nic_link_delay_s);
      }
    }
  }
  return fabric;
}

}  // namespace weft::sim
