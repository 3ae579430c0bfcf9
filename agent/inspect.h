// `weft-agent inspect`: the first thing an operator runs on a new node — what the
// agent discovers (NICs with netdev, PCI, NUMA, state, speed, MTU and RoCE v2 GIDs;
// GPUs with their closest NIC), one reading of every counter, and the QoS and DCQCN
// tunables of every NIC, with the per-NIC errors and warnings that explain a missing
// number. Pure formatting over a backend's
// results; thread-safe.
#ifndef WEFT_AGENT_INSPECT_H_
#define WEFT_AGENT_INSPECT_H_

#include <string>
#include <vector>

#include "agent/nic_backend.h"
#include "proto/weft/v1/agent.pb.h"

namespace weft::agent {

// The snapshot as the wire API spells it (cumulative totals; rates are not valid).
weft::v1::NodeSnapshot MakeSnapshot(const NodeInventory& inventory,
                                    const std::vector<RawNicReading>& readings);

// Reads every tunable of every NIC into snapshot.tunables (one entry per NIC; the
// parameters a NIC cannot read go to `unreadable` with the reason).
void AddTunables(const std::vector<NicTunables*>& nics, weft::v1::NodeSnapshot* snapshot);

// Human-readable report: a NIC table, a GPU table, one counter table with a column per
// NIC ("-" where a NIC lacks the counter; no row for a counter no NIC has), a QoS/DCQCN
// table with a column per RoCE NIC ("-" where it cannot be read), then notes, errors,
// warnings, the counters each port lacks and why tunables could not be read.
std::string FormatSnapshotTable(const weft::v1::NodeSnapshot& snapshot);

}  // namespace weft::agent

#endif  // WEFT_AGENT_INSPECT_H_
