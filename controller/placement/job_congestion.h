// JobCongestionOf: the congestion the controller sees on one job's nodes
// (weft.v1.JobCongestion), joined from a reservation and the inventory's node
// table (Inventory::ListNodes). Rates are not recomputed: they are the nodes'
// NodeRates as `weftctl nodes` shows them (controller/health/nic_rates.h sums
// each node's NICs), so the two views always agree. Pure functions over protos;
// thread-safe (no state).
//
//   ecn_marked_per_s, cnp_sent_per_s, retransmits_per_s
//                    summed over the job's nodes (each already a sum over its
//                    NICs);
//   pfc_pause_share  the largest share of any of the job's nodes, in its
//   more-paused
//                    direction: a node's share is that of its most-paused
//                    priority of its most-paused NIC (common/pfc_share.h); on a
//                    RoCE fabric PFC is on for the RoCE priority only, so that
//                    is the RoCE priority's;
//   findings         one line per job node that is not HEALTHY (or is drained),
//   in ring
//                    order: "gpu-b03: DEGRADED (pfc_pause_storm)", "gpu-b04:
//                    DRAINED (bad optic)", "gpu-b05: DOWN (not reporting)",
//                    "gpu-b06: not registered".
#ifndef WEFT_CONTROLLER_PLACEMENT_JOB_CONGESTION_H_
#define WEFT_CONTROLLER_PLACEMENT_JOB_CONGESTION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::controller {

// Node name -> its status; the pointers borrow from the vector indexed.
using NodesByName = absl::flat_hash_map<std::string, const weft::v1::NodeStatus *>;

NodesByName IndexNodesByName(const std::vector<weft::v1::NodeStatus> &nodes);

// The congestion on the nodes of `reservation` (its ring_order) as `nodes`
// shows them.
weft::v1::JobCongestion JobCongestionOf(const weft::v1::PlacementResponse &reservation,
                                        const NodesByName &nodes);

// The finding line of node `name` (see above); nullopt for a HEALTHY undrained
// node. `status` is null for a node the inventory does not know.
std::optional<std::string> NodeFindingOf(const std::string &name,
                                         const weft::v1::NodeStatus *status);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_JOB_CONGESTION_H_
