// Cluster snapshot from the inventory: turns the controller's node table (what
// Inventory::ListNodes returns) into the weft.v1.ClusterSnapshot the placement engine
// (placement/engine.h) works on. Pure functions over protos; PlacementManager calls
// them on every placement and for GetTopology. Thread-safe (no state).
//
// Per registered node:
//   rack, pod     from its registration (NodeInfo). A node that registered no rack
//                 gets the one its NICs' LLDP neighbors imply (InferRack in cabling.h:
//                 its ToR, or the '+'-joined group of its rail leaves) and is marked
//                 rack_from_lldp; one without LLDP neighbors either is left out
//                 (OmittedNode, saying how to fix it). A rack name registered under two
//                 pods names two racks (the inventory's rack table keys racks by
//                 (pod, rack) too): each is then written "pod/rack".
//   healthy       the node reports and its health rules say HEALTHY (so DOWN and
//                 DEGRADED nodes are not eligible); a drained node keeps its own
//                 health here and is marked `drained`.
//   drained       drained by an operator or by the auto-drain policy.
//   nics          its RDMA NICs whose link layer is Ethernet (or unknown), with port,
//                 netdev, the RoCE v2 GID index NCCL should use (RoceV2GidIndex) and
//                 the LLDP neighbor's switch and port (for the cabling check).
//   gpus          index and closest NIC; a closest NIC the node does not list (or that
//                 is not Ethernet) is dropped, so the GPU falls back to its rail; a
//                 repeated GPU index keeps its first entry.
//   congestion    NodeCongestion below, 0 while the node is not reporting.
// The engine derives each rack's congestion as the mean of its nodes' scores
// (placement/topology.h).
//
// Congestion score of a node, 0 (quiet) .. 1 (saturated): the highest score of its
// NICs, because a collective runs at the pace of its slowest rail. A NIC's score,
// from its latest sample (0 without a sample with valid rates), is
//
//   min(1, max(pause_share / scale.pfc_pause_share,
//              ecn_ratio   / scale.ecn_mark_ratio))
//
//   pause_share  the share of each second the most-paused PFC priority was paused, in
//                the more-paused direction, 0..1 (common/pfc_share.h; 0 without PFC);
//   ecn_ratio    np_ecn_marked_roce_packets/s ÷ port_rcv_packets/s, counted only while
//                the NIC receives at least scale.ecn_min_rcv_packets_per_s (else 0).
//
// Both are read exactly as the pfc_pause_storm and ecn_mark_ratio health rules read
// them (ReadingFromSample in health_rules.h).
//
// So a score of 1 means "at the level where the health rule of the same name fires",
// and the scale is the controller's health thresholds (CongestionScale::
// FromThresholds): with the defaults a NIC paused 25% of the time, or with 5% of its
// received packets ECN-marked, scores 0.5.
#ifndef WEFT_CONTROLLER_PLACEMENT_CLUSTER_SNAPSHOT_H_
#define WEFT_CONTROLLER_PLACEMENT_CLUSTER_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "controller/health/health_rules.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/placement.pb.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::controller {

// What a congestion score of 1 means (see the formula above).
struct CongestionScale {
  double pfc_pause_share = 0.5;
  double ecn_mark_ratio = 0.1;
  double ecn_min_rcv_packets_per_s = 1000;

  // The pfc_pause_storm and ecn_mark_ratio thresholds of the health rules.
  static CongestionScale FromThresholds(const HealthThresholds& thresholds);
};

// The score of one NIC's latest sample, 0..1; 0 for a sample with an error or without
// valid rates.
double NicCongestion(const weft::v1::NicSample& sample, const CongestionScale& scale);

// The score of a node: the highest of its NICs'; 0 while it is not reporting.
double NodeCongestion(const weft::v1::NodeStatus& node, const CongestionScale& scale);

// The GID index NCCL_IB_GID_INDEX should name for `nic`: the lowest-index RoCE v2 GID
// holding an IPv4-mapped address (::ffff:a.b.c.d, what NCCL picks on an IPv4 fabric),
// else the lowest-index RoCE v2 GID that is not link-local (an IPv6 fabric); nullopt
// when there is neither (NCCL then chooses). GIDs bound to another netdev than the
// NIC's are skipped.
std::optional<uint32_t> RoceV2GidIndex(const weft::v1::Nic& nic);

struct InventorySnapshot {
  weft::v1::ClusterSnapshot snapshot;  // nodes in the order given
  std::vector<weft::v1::OmittedNode> omitted;
};

// The snapshot of `nodes` (as Inventory::ListNodes returns them) taken at `now`.
// Built to pass placement::Topology::Build: a NIC device repeated within a node (a
// second port) keeps its first port, and the rules above settle everything else.
InventorySnapshot SnapshotFromNodes(const std::vector<weft::v1::NodeStatus>& nodes,
                                    const CongestionScale& scale, absl::Time now);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_CLUSTER_SNAPSHOT_H_
