// Synthetic clusters and job streams for the placement benchmark: leaf-spine clusters
// of 64 to 4,096 eight-GPU nodes named in hostname order (pod, rack, node), fragmented
// by earlier random allocations, and a reproducible stream of mixed jobs.
// Pure functions over an explicit random engine; not thread-safe per engine.
#ifndef WEFT_BENCH_PLACEMENT_SYNTHETIC_H_
#define WEFT_BENCH_PLACEMENT_SYNTHETIC_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::bench {

struct ClusterSpec {
  int nodes = 0;
  int nodes_per_rack = 16;
  int racks_per_pod = 4;
};

// Nodes "p<pod>-r<rack>-n<node>" (zero-padded, so name order is pod, rack, node order),
// 8 GPUs and 8 NICs each (GPU i closest to mlx5_i, RoCE v2 GID 3). About 1% of nodes
// unhealthy and 1% drained; one rack in ten is congested (0.3-0.6), the rest quiet
// (0-0.15).
weft::v1::ClusterSnapshot MakeSyntheticCluster(const ClusterSpec& spec, std::mt19937_64& rng);

// Free/taken state of a cluster's nodes (by NodeId) and the jobs holding them.
struct ClusterState {
  std::vector<char> taken;  // by NodeId
  int taken_count = 0;

  void Take(const std::vector<placement::NodeId>& nodes);
  void Free(const std::vector<placement::NodeId>& nodes);
  weft::v1::Occupancy ToOccupancy(const placement::Topology& topo) const;
};

// Fragments `state` the way a busy cluster is: jobs of 1-16 nodes, each taking the next
// free nodes in hostname order from a random start, until `fill` of the nodes are
// taken; then a random `release` share of those jobs ends.
void Fragment(const placement::Topology& topo, double fill, double release,
              std::mt19937_64& rng, ClusterState* state);

// One job of the benchmark stream.
struct StreamJob {
  weft::v1::PlacementRequest request;
  std::string kind;  // "ring", "moe" or "3d"
  int lifetime = 0;  // stream steps before it ends
};

// A job for a cluster of `cluster_nodes`: 60% ring all-reduce (1 GiB of gradients per
// rank), 20% mixture-of-experts (expert groups of 16 GPUs = 2 nodes; 256 MiB all-to-all
// and 512 MiB gradients per rank), 20% 3D-parallel (tensor 8, pipeline 4; 1 GiB
// gradients, 64 MiB activations per rank). Sizes are powers of two from 2 up to an
// eighth of the cluster (3D: from 4), each doubling 0.6 times as likely.
StreamJob RandomJob(int cluster_nodes, int sequence, std::mt19937_64& rng);

}  // namespace weft::bench

#endif  // WEFT_BENCH_PLACEMENT_SYNTHETIC_H_
