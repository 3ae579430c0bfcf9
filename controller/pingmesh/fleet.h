// Fleet: what the controller's pingmesh reads of the inventory, and the pinglists it
// sends, as pure functions (controller/pingmesh/pingmesh_manager.h calls them).
//
// A node is probed when it reports and its agent answers probes (NodeInfo.probe_udp_port);
// a NIC of it when it has a RoCE v2 GID that maps an IPv4 address (the address probes go
// to) and a known ToR: its LLDP neighbor's switch, else "<rack>/tor" for a node in a rack
// (one ToR per rack). NIC i is on rail i. Everything left out is listed with its reason.
// A stream goes over RDMA UD when both NICs have a UD responder (Nic.probe_ud_qpn), else
// over UDP.
#ifndef WEFT_CONTROLLER_PINGMESH_FLEET_H_
#define WEFT_CONTROLLER_PINGMESH_FLEET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "pingmesh/pinglist.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::controller {

struct ProbedNic {
  std::string address;  // IPv4, dotted
  std::string gid;      // the RoCE v2 GID it came from
  uint32_t ud_qpn = 0;  // 0: no UD responder
};

struct Fleet {
  pingmesh::FabricInventory inventory;  // nodes sorted by name
  absl::flat_hash_map<std::string, uint32_t> udp_ports;  // node → responder port
  absl::flat_hash_map<std::string, ProbedNic> nics;      // "node/nic" → addressing
  // "node: why" or "node/nic: why", sorted.
  std::vector<std::string> unprobed;
  // Equal for two fleets that give the same pinglists.
  std::string fingerprint;
};

// The IPv4 address a GID maps ("0000:...:ffff:0a00:0001" → "10.0.0.1"); nullopt when it
// is not IPv4-mapped or not a GID.
std::optional<std::string> Ipv4OfGid(absl::string_view gid);

// `tor_uplinks`: each ToR's equal-cost uplinks.
Fleet FleetFromNodes(const std::vector<weft::v1::NodeStatus>& nodes, int tor_uplinks);

struct PinglistWire {
  uint32_t window_ms = 250;
  uint32_t timeout_ms = 1000;
};

// Each node's pinglist (version 0: the caller stamps it), sorted by node: one peer per
// (source NIC, destination NIC) with the source ports of its streams, at their summed rate.
std::vector<std::pair<std::string, weft::v1::Pinglist>> PinglistProtos(
    const pingmesh::PinglistPlan& plan, const Fleet& fleet, const PinglistWire& wire);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PINGMESH_FLEET_H_
