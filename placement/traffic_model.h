// Traffic model: how many bytes per iteration a job's collectives move across rack and
// pod boundaries for a given rank layout. The engine uses it to rank candidate layouts
// and to fill the prediction in its answer; benchmarks use it to score other placers.
//
// A job is a JobShape: tensor (T) x data (D) x pipeline (P) ranks, numbered tensor
// fastest (rank = t + T*(d + D*p), Megatron-LM's default order), gpus_per_node ranks per
// node, filling nodes in order; expert groups are blocks of E consecutive data indices.
// Three kinds of traffic, each per iteration:
//   * gradients: each data-parallel group (same t, p) runs a ring all-reduce in rank
//     order; every ring edge carries 2*(D-1)/D * gradient_bytes (the classic ring
//     all-reduce volume per rank). A node-level ring visiting k racks contiguously
//     crosses k rack boundaries (k >= 2), counting the edge that closes the ring.
//   * all-to-all: each rank of an expert group of E ranks sends alltoall_bytes/E to each
//     of the other E-1; bytes across racks = (E^2 - sum over racks of c_r^2) *
//     alltoall_bytes / E, c_r being the group's ranks in rack r.
//   * pipeline: each rank of stage p < P-1 sends activation_bytes to the rank with the
//     same (t, d) in stage p+1.
// Bytes between GPUs of one node use NVLink and count nowhere; bytes between nodes count
// as inter-node; between racks also as cross-rack; between pods also as cross-pod.
//
// Pure functions; thread-safe.
#ifndef WEFT_PLACEMENT_TRAFFIC_MODEL_H_
#define WEFT_PLACEMENT_TRAFFIC_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

struct JobShape {
  int gpus_per_node = 1;
  int nodes = 0;
  int tensor = 1;
  int pipeline = 1;
  int data = 1;
  int expert = 1;

  int ranks() const { return tensor * pipeline * data; }
  // Nodes one expert group spans when it spans whole nodes (tensor*expert a multiple
  // of gpus_per_node), else 1.
  int ExpertGroupNodes() const;
  // Nodes one pipeline stage spans when stages are whole nodes, else 1.
  int StageNodes() const;
};

struct TrafficBytes {
  uint64_t gradient_bytes = 0;
  uint64_t alltoall_bytes = 0;
  uint64_t activation_bytes = 0;

  bool empty() const {
    return gradient_bytes == 0 && alltoall_bytes == 0 && activation_bytes == 0;
  }
};

// Per-link loads of one iteration, for link-level time models (bench/placement).
struct LinkLoads {
  // Indexed by node position in rank order: bytes the node sends to / receives from
  // other nodes.
  std::vector<double> node_egress_bytes;
  std::vector<double> node_ingress_bytes;
  // Indexed by rack id (as passed in node_rack; sized max id + 1): bytes leaving /
  // entering the rack through its ToR uplinks.
  std::vector<double> rack_egress_bytes;
  std::vector<double> rack_ingress_bytes;
};

struct TrafficPrediction {
  uint64_t cross_rack_bytes = 0;  // includes cross-pod bytes
  uint64_t cross_pod_bytes = 0;
  uint64_t inter_node_bytes = 0;  // includes cross-rack bytes
};

// The shape of `request` on nodes using `gpus_per_node` GPUs (already resolved from
// the snapshot when the request leaves it 0). INVALID_ARGUMENT, saying what to change,
// when: no size is given; rank_count is not a multiple of gpus_per_node; tensor size
// exceeds gpus_per_node or does not divide it; tensor*pipeline*data differs from the
// rank count; data is not a multiple of tensor*pipeline when derived; expert does not
// divide data.
absl::StatusOr<JobShape> ResolveJobShape(const weft::v1::PlacementRequest& request,
                                         int gpus_per_node);

// Predicts the traffic of `shape` when node i in rank order sits in rack node_rack[i]
// and pod node_pod[i] (any non-negative ids; both spans have shape.nodes entries).
// When `loads` is not null it also fills per-link loads.
TrafficPrediction PredictTraffic(const JobShape& shape, const TrafficBytes& bytes,
                                 absl::Span<const int> node_rack,
                                 absl::Span<const int> node_pod,
                                 LinkLoads* loads = nullptr);

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_TRAFFIC_MODEL_H_
