// Rendering of the controller's views for weftctl — nodes, one node, events, racks —
// as aligned text tables for people and JSON (proto3 JSON mapping) for scripts. Pure
// functions over protos; thread-safe.
#ifndef WEFT_CLI_NODE_FORMAT_H_
#define WEFT_CLI_NODE_FORMAT_H_

#include <string>
#include <vector>

#include "common/text_output.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft {

// "HEALTHY", "DOWN", ... (the enum name without its NODE_STATE_ prefix).
std::string NodeStateName(weft::v1::NodeState state);

// A count per second as weftctl's tables show it: whole from 100 up, else one decimal.
std::string FormatRatePerS(double per_s);

// One row per node: NODE RACK STATE NICS TX_GBPS RX_GBPS ECN_PKT/S CNP/S PFC_RX_PAUSED
// PFC_TX_PAUSED (share of time, most-paused NIC and priority) NOTE, sorted by rack then
// node name. NOTE carries the drain reason of a DRAINED node
// and the firing health rules in brief ("pfc_pause_storm@mlx5_0"); down-but-drained
// rows say so, and a DEGRADED node with no rule firing any more says it is recovering.
std::string FormatNodesTable(const weft::v1::ListNodesResponse& nodes);

// "pfc_pause_storm@mlx5_0, link_down@mlx5_3 +2 more": the firing rules of a node in
// brief (at most two named); "" when none fires.
std::string FindingsBrief(const weft::v1::NodeStatus& node);

// A node's identity, state (with who drained it and its health by the rules), the
// findings with their numbers, per-NIC table (device, netdev, PCI, NUMA, state, speed,
// MTU, RoCE v2 GID index, current rates) and GPU table (index, PCI, NUMA, closest NIC).
std::string FormatNodeDetail(const weft::v1::NodeStatus& node);

// One row per event, oldest first: TIME (UTC, ms) NODE EVENT DETAIL; a closing line
// when the controller's bounded log may have dropped matching events.
std::string FormatEventsTable(const weft::v1::ListEventsResponse& events);

// Per rack (POD RACK NODES HEALTHY DEGRADED DOWN DRAINED TX_GBPS RX_GBPS ECN_PKT/S
// CNP/S PFC_RX_PAUSED PFC_TX_PAUSED), then the same per pod (with its number of racks).
std::string FormatRacksTable(const weft::v1::ListRacksResponse& racks);



}  // namespace weft

#endif  // WEFT_CLI_NODE_FORMAT_H_
