#include "controller/pingmesh/fleet.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "topology/cabling.h"

namespace weft::controller {
namespace {

// The RoCE v2 GID of `nic` that maps an IPv4 address, if any.
std::optional<std::pair<std::string, std::string>> RoceV2Ipv4(const weft::v1::Nic& nic) {
  for (const weft::v1::GidEntry& entry : nic.gids()) {
    if (entry.type() != weft::v1::GID_TYPE_ROCE_V2) continue;
    if (std::optional<std::string> ipv4 = Ipv4OfGid(entry.gid())) {
      return std::make_pair(*ipv4, entry.gid());
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> Ipv4OfGid(absl::string_view gid) {
  std::vector<absl::string_view> groups = absl::StrSplit(gid, ':');
  if (groups.size() != 8) return std::nullopt;
  uint32_t words[8];
  for (int i = 0; i < 8; ++i) {
    if (groups[i].size() != 4 || !absl::SimpleHexAtoi(groups[i], &words[i])) return std::nullopt;
  }
  for (int i = 0; i < 5; ++i) {
    if (words[i] != 0) return std::nullopt;
  }
  if (words[5] != 0xffff) return std::nullopt;
  return absl::StrCat(words[6] >> 8, ".", words[6] & 0xff, ".", words[7] >> 8, ".",
                      words[7] & 0xff);
}

Fleet FleetFromNodes(const std::vector<weft::v1::NodeStatus>& nodes, int tor_uplinks) {
  Fleet fleet;
  std::map<std::string, const weft::v1::NodeStatus*> by_name;
  for (const weft::v1::NodeStatus& status : nodes) by_name[status.info().name()] = &status;
  std::map<std::string, bool> tors;
  for (const auto& [name, status] : by_name) {
    const weft::v1::NodeInfo& info = status->info();
    if (!status->reporting()) {
      fleet.unprobed.push_back(absl::StrCat(name, ": not reporting"));
      continue;
    }
    if (info.probe_udp_port() == 0) {
      fleet.unprobed.push_back(absl::StrCat(name, ": its agent does not answer probes "
                                                  "(probe.udp_port is 0)"));
      continue;
    }
    pingmesh::NodeSpec node;
    node.name = name;
    node.rack = info.rack();
    for (int i = 0; i < info.nics_size(); ++i) {
      const weft::v1::Nic& nic = info.nics(i);
      const std::string nic_name = absl::StrCat(name, "/", nic.device());
      std::optional<std::pair<std::string, std::string>> address = RoceV2Ipv4(nic);
      if (!address.has_value()) {
        fleet.unprobed.push_back(absl::StrCat(nic_name, ": no RoCE v2 GID with an IPv4 address"));
        continue;
      }
      std::string tor = topology::LldpSwitchName(nic.lldp_neighbor());
      if (tor.empty() && !info.rack().empty()) tor = absl::StrCat(info.rack(), "/tor");
      if (tor.empty()) {
        fleet.unprobed.push_back(absl::StrCat(nic_name, ": no LLDP neighbor and no rack"));
        continue;
      }
      tors[tor] = true;
      // An unknown speed is taken as 100 Gb/s, the smallest RoCE NIC in GPU clusters.
      const double bps = nic.speed_mbps() > 0 ? nic.speed_mbps() * 1e6 : 100e9;
      node.nics.push_back(pingmesh::NicSpec{nic.device(), i, tor, bps});
      fleet.nics[nic_name] = ProbedNic{address->first, address->second, nic.probe_ud_qpn()};
      absl::StrAppend(&fleet.fingerprint, nic_name, "@", address->first, "#",
                      nic.probe_ud_qpn(), ">", tor, "|", bps, ";");
    }
    if (node.nics.empty()) continue;
    fleet.udp_ports[name] = info.probe_udp_port();
    absl::StrAppend(&fleet.fingerprint, name, ":", info.probe_udp_port(), "@", info.rack(), ";");
    fleet.inventory.nodes.push_back(std::move(node));
  }
  for (const auto& [tor, unused] : tors) {
    fleet.inventory.tors.push_back(pingmesh::TorSpec{tor, tor_uplinks});
  }
  absl::StrAppend(&fleet.fingerprint, "uplinks=", tor_uplinks);
  std::sort(fleet.unprobed.begin(), fleet.unprobed.end());
  return fleet;
}

std::vector<std::pair<std::string, weft::v1::Pinglist>> PinglistProtos(
    const pingmesh::PinglistPlan& plan, const Fleet& fleet, const PinglistWire& wire) {
  std::vector<std::pair<std::string, weft::v1::Pinglist>> out;
  for (const pingmesh::Pinglist& list : plan.pinglists) {
    weft::v1::Pinglist proto;
    proto.set_window_ms(wire.window_ms);
    proto.set_timeout_ms(wire.timeout_ms);
    // Entries are sorted by key, so one peer's streams are adjacent but for their
    // traffic class; group by (source NIC, destination node, destination NIC, class).
    std::map<std::tuple<std::string, std::string, std::string, uint8_t>, weft::v1::ProbePeer*>
        peers;
    for (const pingmesh::PinglistEntry& entry : list.entries) {
      const pingmesh::ProbeKey& key = entry.key;
      auto [it, inserted] = peers.try_emplace(
          std::make_tuple(key.src_nic, key.dst_node, key.dst_nic, key.traffic_class), nullptr);
      if (inserted) {
        const ProbedNic& source = fleet.nics.at(absl::StrCat(key.src_node, "/", key.src_nic));
        const ProbedNic& peer_nic = fleet.nics.at(absl::StrCat(key.dst_node, "/", key.dst_nic));
        weft::v1::ProbePeer* peer = proto.add_peers();
        peer->set_node(key.dst_node);
        peer->set_nic(key.dst_nic);
        peer->set_address(peer_nic.address);
        peer->set_udp_port(fleet.udp_ports.at(key.dst_node));
        peer->set_source_nic(key.src_nic);
        peer->set_source_address(source.address);
        peer->set_dscp(key.traffic_class);
        if (source.ud_qpn != 0 && peer_nic.ud_qpn != 0) {
          peer->set_transport(weft::v1::PROBE_TRANSPORT_RDMA_UD);
          peer->set_gid(peer_nic.gid);
          peer->set_ud_qpn(peer_nic.ud_qpn);
        } else {
          peer->set_transport(weft::v1::PROBE_TRANSPORT_UDP);
        }
        it->second = peer;
      }
      it->second->add_source_ports(key.udp_src_port);
      it->second->set_probes_per_second(it->second->probes_per_second() + entry.probes_per_s);
    }
    out.emplace_back(list.node, std::move(proto));
  }
  return out;
}

}  // namespace weft::controller
