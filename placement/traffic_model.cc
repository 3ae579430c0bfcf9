#include "placement/traffic_model.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace weft::placement {
namespace {

using weft::v1::PlacementRequest;

constexpr int64_t kMaxRanks = 1 << 20;

using uint128 = unsigned __int128;

uint64_t Scale(uint128 count, uint64_t numerator, uint64_t denominator) {
  if (denominator == 0) return 0;
  return static_cast<uint64_t>(count * numerator / denominator);
}

// Bucket counts keyed by small non-negative ids, reset cheaply between groups.
class Tally {
 public:
  explicit Tally(int size) : counts_(size, 0) {}
  void Add(int id) {
    if (counts_[id]++ == 0) touched_.push_back(id);
  }
  // Sum of squared counts, then clears.
  uint64_t SumSquaresAndClear() {
    uint64_t sum = 0;
    for (int id : touched_) {
      sum += static_cast<uint64_t>(counts_[id]) * counts_[id];
      counts_[id] = 0;
    }
    touched_.clear();
    return sum;
  }
  const std::vector<int>& touched() const { return touched_; }
  int count(int id) const { return counts_[id]; }

 private:
  std::vector<int> counts_;
  std::vector<int> touched_;
};

}  // namespace

int JobShape::ExpertGroupNodes() const {
  const int ranks_per_group = tensor * expert;
  if (expert < 2 || ranks_per_group % gpus_per_node != 0) return 1;
  return ranks_per_group / gpus_per_node;
}

int JobShape::StageNodes() const {
  const int ranks_per_stage = tensor * data;
  if (pipeline < 2 || ranks_per_stage % gpus_per_node != 0) return 1;
  return ranks_per_stage / gpus_per_node;
}

absl::StatusOr<JobShape> ResolveJobShape(const PlacementRequest& request, int gpus_per_node) {
  if (gpus_per_node < 1) {
    return absl::InvalidArgumentError("gpus_per_node must be at least 1");
  }
  const int64_t gpn = gpus_per_node;
  const bool has_parallelism = request.shape_case() == PlacementRequest::kParallelism;
  const weft::v1::Parallelism& par = request.parallelism();
  const int64_t tensor = has_parallelism && par.tensor() > 0 ? par.tensor() : 1;
  const int64_t pipeline = has_parallelism && par.pipeline() > 0 ? par.pipeline() : 1;
  const int64_t expert = has_parallelism && par.expert() > 0 ? par.expert() : 1;

  int64_t ranks = 0;
  std::string ranks_text;
  switch (request.size_case()) {
    case PlacementRequest::kNodeCount:
      if (request.node_count() == 0) {
        return absl::InvalidArgumentError("node_count is 0; ask for at least one node");
      }
      ranks = static_cast<int64_t>(request.node_count()) * gpn;
      ranks_text = absl::StrCat(ranks, " ranks (", request.node_count(), " nodes x ", gpn,
                                " GPUs)");
      break;
    case PlacementRequest::kRankCount:
      if (request.rank_count() == 0) {
        return absl::InvalidArgumentError("rank_count is 0; ask for at least one rank");
      }
      ranks = request.rank_count();
      if (ranks % gpn != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "rank_count ", ranks, " is not a multiple of gpus_per_node ", gpn,
            "; ask for a multiple of ", gpn, " ranks or set gpus_per_node to a divisor of ",
            ranks));
      }
      ranks_text = absl::StrCat(ranks, " ranks");
      break;
    case PlacementRequest::SIZE_NOT_SET:
      if (!has_parallelism || par.data() == 0) {
        return absl::InvalidArgumentError(
            "the request gives no size; set node_count, rank_count, or parallelism.data");
      }
      ranks = tensor * pipeline * static_cast<int64_t>(par.data());
      if (ranks % gpn != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor x pipeline x data = ", tensor, " x ", pipeline, " x ", par.data(), " = ",
            ranks, " ranks is not a multiple of gpus_per_node ", gpn,
            "; change the sizes or set gpus_per_node to a divisor of ", ranks));
      }
      ranks_text = absl::StrCat(ranks, " ranks");
      break;
  }
  if (ranks > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("the job has ", ranks, " ranks; at most ", kMaxRanks, " are supported"));
  }

  JobShape shape;
  shape.gpus_per_node = gpus_per_node;
  shape.nodes = static_cast<int>(ranks / gpn);
  if (!has_parallelism) {
    switch (request.pattern()) {
      case weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL:
        shape.data = static_cast<int>(ranks);
        shape.expert = static_cast<int>(ranks);
        break;
      case weft::v1::TRAFFIC_PATTERN_PIPELINE:
        shape.tensor = gpus_per_node;
        shape.pipeline = shape.nodes;
        shape.data = 1;
        break;
      default:
        shape.data = static_cast<int>(ranks);
        break;
    }
    return shape;
  }

  if (tensor > gpn) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor parallel size ", tensor, " is larger than gpus_per_node ", gpn,
        ": a tensor-parallel group must fit inside one node"));
  }
  if (gpn % tensor != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor parallel size ", tensor, " does not divide gpus_per_node ", gpn,
        ": tensor-parallel groups must not straddle nodes"));
  }
  int64_t data = par.data();
  if (data == 0) {
    if (ranks % (tensor * pipeline) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the job has ", ranks_text, ", not a multiple of tensor x pipeline = ", tensor,
          " x ", pipeline, "; set parallelism.data or change the sizes"));
    }
    data = ranks / (tensor * pipeline);
  }
  if (tensor * pipeline * data != ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor x pipeline x data = ", tensor, " x ", pipeline, " x ", data, " = ",
        tensor * pipeline * data, " ranks, but the job has ", ranks_text));
  }
  if (data % expert != 0) {
    return absl::InvalidArgumentError(absl::StrCat("expert parallel size ", expert,
                                                   " does not divide data parallel size ",
                                                   data));
  }
  shape.tensor = static_cast<int>(tensor);
  shape.pipeline = static_cast<int>(pipeline);
  shape.data = static_cast<int>(data);
  shape.expert = static_cast<int>(expert);
  return shape;
}

TrafficPrediction PredictTraffic(const JobShape& shape, const TrafficBytes& bytes,
                                 absl::Span<const int> node_rack,
                                 absl::Span<const int> node_pod, LinkLoads* loads) {
  const int T = shape.tensor, D = shape.data, P = shape.pipeline, E = shape.expert;
  const int gpn = shape.gpus_per_node;
  // When tensor groups tile nodes (T divides gpus_per_node), every tensor index sees the
  // same node sequence: rank t + T*x sits on node floor(x / (gpn / T)). Then one tensor
  // index is walked and its counts weighed T times.
  const int tensor_walked = gpn % T == 0 ? 1 : T;
  const int weight = T / tensor_walked;
  // Node of each rank, without a division per lookup in the loops below.
  std::vector<int> rank_node(static_cast<size_t>(T) * D * P);
  for (size_t r = 0, node = 0, slot = 0; r < rank_node.size(); ++r) {
    rank_node[r] = static_cast<int>(node);
    if (++slot == static_cast<size_t>(gpn)) slot = 0, ++node;
  }
  auto node_of = [&](int64_t rank) { return rank_node[rank]; };
  auto rank_of = [&](int t, int d, int p) {
    return t + static_cast<int64_t>(T) * (d + static_cast<int64_t>(D) * p);
  };
  int max_rack = 0, max_pod = 0;
  for (int r : node_rack) max_rack = std::max(max_rack, r);
  for (int p : node_pod) max_pod = std::max(max_pod, p);
  if (loads != nullptr) {
    loads->node_egress_bytes.assign(node_rack.size(), 0);
    loads->node_ingress_bytes.assign(node_rack.size(), 0);
    loads->rack_egress_bytes.assign(max_rack + 1, 0);
    loads->rack_ingress_bytes.assign(max_rack + 1, 0);
  }

  TrafficPrediction out;

  // Gradients: one ring per data-parallel group, members in order of d.
  if (D >= 2 && bytes.gradient_bytes > 0) {
    uint128 node_edges = 0, rack_edges = 0, pod_edges = 0;
    const double edge_bytes =
        2.0 * (D - 1) / D * static_cast<double>(bytes.gradient_bytes) * weight;
    for (int p = 0; p < P; ++p) {
      for (int t = 0; t < tensor_walked; ++t) {
        int prev = node_of(rank_of(t, D - 1, p));  // the edge closing the ring
        for (int d = 0; d < D; ++d) {
          const int cur = node_of(rank_of(t, d, p));
          if (cur != prev) {
            ++node_edges;
            if (node_rack[cur] != node_rack[prev]) ++rack_edges;
            if (node_pod[cur] != node_pod[prev]) ++pod_edges;
            if (loads != nullptr) {
              loads->node_egress_bytes[prev] += edge_bytes;
              loads->node_ingress_bytes[cur] += edge_bytes;
              if (node_rack[cur] != node_rack[prev]) {
                loads->rack_egress_bytes[node_rack[prev]] += edge_bytes;
                loads->rack_ingress_bytes[node_rack[cur]] += edge_bytes;
              }
            }
          }
          prev = cur;
        }
      }
    }
    node_edges *= weight;
    rack_edges *= weight;
    pod_edges *= weight;
    const uint64_t numerator = 2ull * (D - 1) * bytes.gradient_bytes;
    out.inter_node_bytes += Scale(node_edges, numerator, D);
    out.cross_rack_bytes += Scale(rack_edges, numerator, D);
    out.cross_pod_bytes += Scale(pod_edges, numerator, D);
  }

  // All-to-all inside each expert group: ordered pairs in different places.
  if (E >= 2 && bytes.alltoall_bytes > 0) {
    Tally nodes(static_cast<int>(node_rack.size())), racks(max_rack + 1), pods(max_pod + 1);
    uint128 node_pairs = 0, rack_pairs = 0, pod_pairs = 0;
    const uint64_t e2 = static_cast<uint64_t>(E) * E;
    const double pair_bytes = static_cast<double>(bytes.alltoall_bytes) / E * weight;
    for (int p = 0; p < P; ++p) {
      for (int t = 0; t < tensor_walked; ++t) {
        for (int block = 0; block < D / E; ++block) {
          for (int d = block * E; d < (block + 1) * E; ++d) {
            const int n = node_of(rank_of(t, d, p));
            nodes.Add(n);
            racks.Add(node_rack[n]);
            pods.Add(node_pod[n]);
          }
          if (loads != nullptr) {
            for (int n : nodes.touched()) {
              const double out_bytes = static_cast<double>(nodes.count(n)) *
                                       (E - nodes.count(n)) * pair_bytes;
              loads->node_egress_bytes[n] += out_bytes;
              loads->node_ingress_bytes[n] += out_bytes;
            }
            for (int r : racks.touched()) {
              const double out_bytes = static_cast<double>(racks.count(r)) *
                                       (E - racks.count(r)) * pair_bytes;
              loads->rack_egress_bytes[r] += out_bytes;
              loads->rack_ingress_bytes[r] += out_bytes;
            }
          }
          node_pairs += e2 - nodes.SumSquaresAndClear();
          rack_pairs += e2 - racks.SumSquaresAndClear();
          pod_pairs += e2 - pods.SumSquaresAndClear();
        }
      }
    }
    node_pairs *= weight;
    rack_pairs *= weight;
    pod_pairs *= weight;
    out.inter_node_bytes += Scale(node_pairs, bytes.alltoall_bytes, E);
    out.cross_rack_bytes += Scale(rack_pairs, bytes.alltoall_bytes, E);
    out.cross_pod_bytes += Scale(pod_pairs, bytes.alltoall_bytes, E);
  }

  // Pipeline: each rank to its peer in the next stage.
  if (P >= 2 && bytes.activation_bytes > 0) {
    uint128 node_pairs = 0, rack_pairs = 0, pod_pairs = 0;
    const double pair_bytes = static_cast<double>(bytes.activation_bytes) * weight;
    for (int p = 0; p + 1 < P; ++p) {
      for (int d = 0; d < D; ++d) {
        for (int t = 0; t < tensor_walked; ++t) {
          const int a = node_of(rank_of(t, d, p));
          const int b = node_of(rank_of(t, d, p + 1));
          if (a == b) continue;
          ++node_pairs;
          const bool cross_rack = node_rack[a] != node_rack[b];
          if (cross_rack) ++rack_pairs;
          if (node_pod[a] != node_pod[b]) ++pod_pairs;
          if (loads != nullptr) {
            loads->node_egress_bytes[a] += pair_bytes;
            loads->node_ingress_bytes[b] += pair_bytes;
            if (cross_rack) {
              loads->rack_egress_bytes[node_rack[a]] += pair_bytes;
              loads->rack_ingress_bytes[node_rack[b]] += pair_bytes;
            }
          }
        }
      }
    }
    node_pairs *= weight;
    rack_pairs *= weight;
    pod_pairs *= weight;
    out.inter_node_bytes += Scale(node_pairs, bytes.activation_bytes, 1);
    out.cross_rack_bytes += Scale(rack_pairs, bytes.activation_bytes, 1);
    out.cross_pod_bytes += Scale(pod_pairs, bytes.activation_bytes, 1);
  }
  return out;
}

}  // namespace weft::placement
