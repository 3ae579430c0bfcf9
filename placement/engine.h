// Placement engine: decides which nodes a job runs on and in which rank order, so that
// its collectives cross as few rack and pod boundaries as the free capacity allows,
// and answers with each rank's GPU and NIC and each node's NCCL environment. Pure
// logic over a snapshot of the cluster and of what is taken; the controller's
// PlacementService and `weftctl place` call it, the reservation book
// (placement/reservations.h) wraps it with leases.
//
// Which nodes: only nodes that are healthy, not drained, not in `occupancy`, not
// excluded by the request, with at least gpus_per_node GPUs, an RDMA NIC (for jobs of
// more than one node) and congestion within constraints.max_congestion.
//
// Among the layouts of those nodes, the engine picks the best by, in order:
//   1. fewest racks;
//   2. fewest pods;
//   3. fewest predicted cross-rack bytes, then cross-pod bytes (placement/
//      traffic_model.h, with the request's byte sizes, or 1 GiB each when it gives
//      none) — this is where all-to-all jobs prefer uneven splits and structured jobs
//      keep expert groups, pipeline stages or pipeline columns inside racks;
//   4. lowest congestion level of the busiest rack used (rack congestion in steps of
//      0.25, so that noise in the scores does not override best fit);
//   5. best fit: the least free capacity left over in the racks used, so that large
//      free racks stay whole for later jobs;
//   6. least total congestion of the nodes used.
//
// How: the fewest racks k comes from the largest free racks; pod sets of the fewest pods
// that can hold the job in k racks are enumerated (all of them while there are at most
// 256 per size). In each, candidate rack sets are a best-fit subset-sum over rack
// capacities (exactly k racks, smallest total that fits) among racks at the lowest
// feasible congestion level, and the k-1 largest racks plus the best-fitting last one;
// both again with capacities rounded down to whole expert groups or pipeline stages.
// Each set is filled largest rack first, in whole units first, and laid out rack by rack
// or, for pipelines of whole-node stages, column by column; structured jobs try every
// rack order up to 5 racks and, up to 32 nodes, a swap-based local search. Every
// candidate is scored with the traffic model.
//
// Checked against exhaustive search on random clusters of up to 16 nodes
// (engine_optimality_test): steps 1-3 are optimal on every flat-pattern job and every
// node-aligned structured job (stages of whole nodes, expert groups of whole nodes or
// inside one); for stages that split a node, racks and pods are optimal and cross-rack
// bytes most of the time (the test prints how often).
//
// Rank order: racks contiguous (pods contiguous), nodes by name inside a rack,
// gpus_per_node consecutive ranks per node. So a ring over k >= 2 racks crosses exactly
// k rack boundaries, tensor-parallel groups (consecutive ranks) stay inside a node,
// pipeline stages are contiguous node ranges, and expert groups stay inside a rack where
// the rack counts allow. The exception is a pipelined job whose traffic is lower with
// each pipeline column (one node per stage) in one rack: then racks repeat in rank
// order. Each GPU uses its closest NIC; a job using fewer GPUs than a node has spreads
// them over the node's NICs.
//
// Refusals (a person can act on the text):
//   INVALID_ARGUMENT    bad request: no job id, bad sizes (see ResolveJobShape), unknown
//                       qos_class, an excluded node that does not exist, gpus_per_node
//                       left 0 on a cluster whose nodes differ; from a snapshot, a
//                       chosen node whose GPUs and NICs are inconsistent.
//   FAILED_PRECONDITION constraints no state of this cluster could meet (max_racks or
//                       single_pod smaller than the job even with every node free).
//   RESOURCE_EXHAUSTED  not enough free eligible capacity now: says how many nodes are
//                       free and eligible per pod and rack and why the others are not.
//
// Thread-safe: no state.
//
// Example:
//   ASSIGN_OR_RETURN(weft::v1::PlacementResponse placed,
//                    Place(snapshot, occupancy, request));
//   for (const auto& env : placed.node_env()) ...
#ifndef WEFT_PLACEMENT_ENGINE_H_
#define WEFT_PLACEMENT_ENGINE_H_

#include "absl/status/statusor.h"
#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

// Places `request` on `topology` minus the nodes in `occupancy` (entries naming nodes
// the topology lacks are ignored). The answer has no reservation_id and no expiry:
// the reservation book sets them.
absl::StatusOr<weft::v1::PlacementResponse> Place(const Topology& topology,
                                                  const weft::v1::Occupancy& occupancy,
                                                  const weft::v1::PlacementRequest& request);

// Places on a Topology::BuildView of `snapshot` (see Topology::Build for its errors;
// GPU and NIC errors are reported for the nodes the placement uses). A caller that
// places often keeps a Topology per snapshot instead and calls the overload above.
absl::StatusOr<weft::v1::PlacementResponse> Place(const weft::v1::ClusterSnapshot& snapshot,
                                                  const weft::v1::Occupancy& occupancy,
                                                  const weft::v1::PlacementRequest& request);

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_ENGINE_H_
