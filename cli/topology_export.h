// `weftctl topology export`: Weft's node -> rack -> pod tiers written in the forms
// schedulers read. The topology comes from the controller (PlacementService.
// GetTopology) or, with --offline, from a static topology file; these functions only
// render it. Pure functions; thread-safe.
//
// Formats:
//   slurm       topology.conf for Slurm's topology/tree plugin: one leaf switch per
//               rack listing its nodes, one switch per pod listing its racks, and, when
//               there is more than one pod (or racks without a pod), a top switch
//               "fabric" over them, so that every node is reachable from one root:
//                 SwitchName=rack-a Nodes=gpu-a01,gpu-a02
//                 SwitchName=pod-1 Switches=rack-a,rack-b
//                 SwitchName=fabric Switches=pod-1,pod-2
//               Weft node names must be the Slurm NodeNames. Names are sorted.
//   k8s-labels  a shell script of kubectl commands that label each node with its tiers:
//                 kubectl label node gpu-a01 topology.weft.io/pod=pod-1 [...]
//                 [...] topology.weft.io/rack=rack-a --overwrite
//               (one line per node, shown split here; no pod label for a node without a
//               pod). These are
//               the levels of a Kueue Topology for topology-aware scheduling (pod,
//               rack, then kubernetes.io/hostname); docs/placement.md shows it.
//   json        the topology as a weft.v1.StaticTopology in proto3 JSON: every node
//               with its rack, pod, GPUs, NICs, health, drain and congestion. It is
//               also valid input to `weftctl place --offline --topology`.
//
// A rack the controller qualified as "pod/rack" (its name is registered under two
// pods; controller/placement/cluster_snapshot.h) keeps that name in slurm and json output and
// is labelled with its own rack name in k8s-labels (Kueue tells the two apart by pod).
#ifndef WEFT_CLI_TOPOLOGY_EXPORT_H_
#define WEFT_CLI_TOPOLOGY_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft {

enum class TopologyFormat { kSlurm, kK8sLabels, kJson };

// "slurm", "k8s-labels" or "json"; INVALID_ARGUMENT listing them otherwise.
absl::StatusOr<TopologyFormat> ParseTopologyFormat(absl::string_view name);

// The name of the top switch of Slurm exports.
inline constexpr char kSlurmTopSwitch[] = "fabric";

// topology.conf. INVALID_ARGUMENT, naming what to rename, when the snapshot is not a
// valid topology (placement::Topology::Build), a node, rack or pod name holds a
// character Slurm's config parser or hostlists would misread (whitespace, = , # [ ]
// or a quote), a rack and a pod share a name, or a name is kSlurmTopSwitch.
// FAILED_PRECONDITION when the snapshot has no nodes.
absl::StatusOr<std::string> FormatSlurmTopology(const weft::v1::ClusterSnapshot& snapshot);

// The kubectl script. INVALID_ARGUMENT when a rack or pod name is not a valid label
// value (at most 63 characters: letters, digits, '-', '_', '.', starting and ending
// with a letter or digit), naming it; FAILED_PRECONDITION when there are no nodes.
absl::StatusOr<std::string> FormatK8sNodeLabels(const weft::v1::ClusterSnapshot& snapshot);

// weft.v1.StaticTopology JSON of the snapshot's nodes.
std::string FormatTopologyJson(const weft::v1::ClusterSnapshot& snapshot);

// One of the above by `format`.
absl::StatusOr<std::string> ExportTopology(const weft::v1::ClusterSnapshot& snapshot,
                                           TopologyFormat format);

}  // namespace weft

#endif  // WEFT_CLI_TOPOLOGY_EXPORT_H_
