// Rendering of the controller's node views for weftctl: aligned text tables for people
// and JSON (proto3 JSON mapping) for scripts. Pure functions over protos; thread-safe.
#ifndef WEFT_CLI_NODE_FORMAT_H_
#define WEFT_CLI_NODE_FORMAT_H_

#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft {

// "HEALTHY", "DOWN", ... (the enum name without its NODE_STATE_ prefix).
std::string NodeStateName(weft::v1::NodeState state);

// One row per node: NODE RACK STATE NICS TX_GBPS RX_GBPS ECN_PKT/S CNP/S PFC_PAUSE_US/S,
// sorted by rack then node name; DRAINED rows carry the reason, down-but-drained rows
// say so.
std::string FormatNodesTable(const weft::v1::ListNodesResponse& nodes);

// A node's identity, state, per-NIC table (device, netdev, PCI, NUMA, state, speed,
// MTU, RoCE v2 GID index, current rates) and GPU table (index, PCI, NUMA, closest NIC).
std::string FormatNodeDetail(const weft::v1::NodeStatus& node);

// Proto3 JSON with the original field names, pretty-printed, ending in a newline.
std::string FormatJson(const google::protobuf::Message& message);

// Columns padded to their widest cell, separated by two spaces.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace weft

#endif  // WEFT_CLI_NODE_FORMAT_H_
