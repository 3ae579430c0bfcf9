// Verdict findings: what pingmesh's verdicts say against each node, as health findings
// (controller/health/health_rules.h) the inventory takes (Inventory::SetExternalFindings),
// so a node pingmesh blames is DEGRADED like one whose counters fire a rule, placement
// avoids it and auto-drain, when on, drains it.
//
// A verdict concerns the node it names (PingmeshVerdict.nodes): a blamed host
// (pingmesh_host), the node of a blamed NIC (pingmesh_nic), the node at the end of a
// blamed NIC cable (pingmesh_link). A switch, a link between switches and an uplink
// bundle concern no node: draining the nodes below a bad switch would not fix it. Nor
// does a component that names several nodes (links the localiser could not tell apart,
// joined by " + "): one of them is innocent, and its events and metrics say so already.
//
// Thread-safe (no state).
#ifndef WEFT_CONTROLLER_PINGMESH_VERDICT_FINDINGS_H_
#define WEFT_CONTROLLER_PINGMESH_VERDICT_FINDINGS_H_

#include <map>
#include <string>
#include <vector>

#include "controller/health/health_rules.h"
#include "proto/weft/v1/pingmesh.pb.h"

namespace weft::controller {

// The findings of `verdicts` by node, one per verdict that names exactly one node, in
// verdict order; nodes no such verdict names are absent.
std::map<std::string, std::vector<Finding>> FindingsByNode(
    const std::vector<weft::v1::PingmeshVerdict>& verdicts);

// True when the two lists hold the same rules on the same components since the same
// time (a verdict's loss estimate moving from window to window is no news).
bool SameFindings(const std::vector<Finding>& a, const std::vector<Finding>& b);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PINGMESH_VERDICT_FINDINGS_H_
