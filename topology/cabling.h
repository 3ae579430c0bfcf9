// Cabling: what the nodes' LLDP neighbors say about the fabric, and whether it matches
// the cabling an operator designed. Pure functions over plain structs and protos; the
// controller's cluster snapshot (cluster_snapshot.h) calls InferRack for nodes that
// registered no rack, and `weftctl topology check` calls CheckCabling on the topology
// the controller serves (GetTopology carries each NIC's LLDP switch). Thread-safe (no
// state).
//
// A NIC's switch is the chassis_name of its LLDP neighbor, else its chassis_id; "" when
// the NIC heard no neighbor. NIC index i is the NIC's position in the node's NIC list
// (the snapshot's order: the agent lists NICs sorted by device).
//
// Rack inference (InferRack): the node's ToR is the switch a strict majority of its
// NICs with a neighbor reach. When there is none (a rail-optimised fabric: NIC i goes to
// rail switch i, so every NIC reaches a different leaf), the rack is the group of
// leaves the node reaches, named by their sorted, de-duplicated names joined with '+'
// ("leaf-r0+leaf-r1+..."): every node cabled to the same set of rail leaves lands in the
// same rack. A node with no neighbor at all has no inferred rack.
//
// The check (CheckCabling), per node in the design whose rack declares cabling
// (RackDesign.tor or .rail_switches; racks not listed are not checked):
//   WRONG_RACK    a strict majority of the NICs with a neighbor reach switches another
//                 rack declares: one finding for the node, no per-NIC findings;
//   MISWIRED      otherwise, each NIC that reaches another switch than expected;
//   MISSING_LINK  each NIC that should reach a switch but heard nothing, and each rail
//                 beyond the node's last NIC;
// and, per observed node, NOT_IN_DESIGN when the design does not list it.
#ifndef WEFT_TOPOLOGY_CABLING_H_
#define WEFT_TOPOLOGY_CABLING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::topology {

struct ObservedNic {
  std::string device;       // "mlx5_0"
  std::string switch_name;  // "" when no LLDP neighbor was heard
  std::string port;         // the switch port, e.g. "Ethernet12"; may be ""
};

struct ObservedNode {
  std::string name;
  std::string rack;  // as registered (or in the snapshot); "" when none
  std::vector<ObservedNic> nics;  // by NIC index
};

// The switch LLDP names for a NIC: chassis_name, else chassis_id, else "".
std::string LldpSwitchName(const weft::v1::LldpNeighbor& neighbor);

// The nodes of `snapshot` with their NICs' lldp_switch and lldp_port.
std::vector<ObservedNode> ObservedFromSnapshot(const weft::v1::ClusterSnapshot& snapshot);

struct RackInference {
  std::string rack;
  bool rail_group = false;  // true: `rack` names a group of rail leaves (see above)
};

// The rack of a node cabled as `nics` say (rules above); nullopt when no NIC heard a
// neighbor.
std::optional<RackInference> InferRack(const std::vector<ObservedNic>& nics);

// The rails of a group of nodes (e.g. one rack): element i is the switch most of the
// nodes' NIC i reach (on a tie, the smallest name), "" when no node's NIC i heard one.
// As long as the longest NIC list.
std::vector<std::string> InferRails(const std::vector<ObservedNode>& nodes);

// The findings of checking `observed` against `design` (rules above), sorted by node,
// then NIC index (whole-node findings first). Empty when the cabling is as designed.
// INVALID_ARGUMENT when the design is inconsistent: a rack listed twice, a rack with
// both tor and rail_switches, a switch declared by two racks, a node listed twice.
absl::StatusOr<weft::v1::CablingReport> CheckCabling(const weft::v1::StaticTopology& design,
                                                     const std::vector<ObservedNode>& observed);

}  // namespace weft::topology

#endif  // WEFT_TOPOLOGY_CABLING_H_
