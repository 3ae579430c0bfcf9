#include "placement/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "placement/nccl_env.h"
#include "placement/traffic_model.h"

namespace weft::placement {
namespace {

using weft::v1::ClusterSnapshot;
using weft::v1::Occupancy;
using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

// Rack congestion is compared in steps of 1/kCongestionLevels, so that noise in the
// scores does not override best fit.
constexpr int kCongestionLevels = 4;
// Pod sets of one size are enumerated while there are at most this many.
constexpr int64_t kMaxPodSets = 256;
// Layout weights when the request gives no byte sizes.
constexpr uint64_t kDefaultWeightBytes = uint64_t{1} << 30;
// Structured jobs try every order of the racks of a candidate up to this many racks.
constexpr int kMaxPermutedParts = 5;
// Structured jobs up to this many nodes get a swap-based local search on top, for at
// most this many passes over all position pairs.
constexpr int kMaxRefinedNodes = 32;
constexpr int kMaxRefinePasses = 4;
// Racks and reasons listed in a refusal before "and N more".
constexpr int kMaxListed = 8;

int CongestionLevel(double congestion) {
  return std::clamp(static_cast<int>(std::floor(congestion * kCongestionLevels + 1e-9)), 0,
                    kCongestionLevels);
}

std::string PodLabel(const Topology& topo, PodId pod) {
  const std::string& name = topo.pod(pod).name;
  return name.empty() ? "(unnamed)" : name;
}

// A rack with free eligible nodes.
struct FreeRack {
  RackId rack = 0;
  PodId pod = 0;
  int level = 0;  // CongestionLevel of the rack
  double congestion = 0;
  std::vector<NodeId> free;  // least congested first, then by name
  std::vector<double> congestion_prefix;  // congestion_prefix[c]: sum over free[0..c)

  int capacity() const { return static_cast<int>(free.size()); }
};

struct Eligibility {
  std::vector<FreeRack> racks;  // ascending rack id
  int total_free = 0;
  int excluded = 0;
  int unhealthy = 0;
  int drained = 0;
  int in_use = 0;
  int few_gpus = 0;
  int no_nic = 0;
  int congested = 0;
};

absl::StatusOr<Eligibility> FindEligible(const Topology& topo, const Occupancy& occupancy,
                                         const PlacementRequest& request,
                                         const JobShape& shape) {
  const int n = static_cast<int>(topo.nodes().size());
  std::vector<char> excluded(n, 0), occupied(n, 0);
  for (const std::string& name : request.constraints().exclude_nodes()) {
    std::optional<NodeId> id = topo.FindNode(name);
    if (!id.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("constraints.exclude_nodes names '", name,
                       "', which is not in the cluster snapshot"));
    }
    excluded[*id] = 1;
  }
  for (const auto& entry : occupancy.entries()) {
    std::optional<NodeId> id = topo.FindNode(entry.node());
    if (id.has_value()) occupied[*id] = 1;
  }
  const auto& constraints = request.constraints();
  const bool limit_congestion = constraints.has_max_congestion();

  Eligibility out;
  for (RackId r = 0; r < static_cast<RackId>(topo.racks().size()); ++r) {
    const TopoRack& rack = topo.rack(r);
    FreeRack fr;
    fr.rack = r;
    fr.pod = rack.pod;
    fr.level = CongestionLevel(rack.congestion);
    fr.congestion = rack.congestion;
    for (NodeId id : rack.nodes) {
      const TopoNode& node = topo.node(id);
      if (excluded[id]) {
        ++out.excluded;
      } else if (!node.healthy) {
        ++out.unhealthy;
      } else if (node.drained) {
        ++out.drained;
      } else if (occupied[id]) {
        ++out.in_use;
      } else if (node.gpu_count < shape.gpus_per_node) {
        ++out.few_gpus;
      } else if (shape.nodes > 1 && node.nic_count == 0) {
        ++out.no_nic;
      } else if (limit_congestion && node.congestion > constraints.max_congestion()) {
        ++out.congested;
      } else {
        fr.free.push_back(id);
      }
    }
    if (fr.free.empty()) continue;
    std::sort(fr.free.begin(), fr.free.end(), [&](NodeId a, NodeId b) {
      const TopoNode& x = topo.node(a);
      const TopoNode& y = topo.node(b);
      return std::tie(x.congestion, x.name) < std::tie(y.congestion, y.name);
    });
    fr.congestion_prefix.assign(fr.free.size() + 1, 0);
    for (size_t i = 0; i < fr.free.size(); ++i) {
      fr.congestion_prefix[i + 1] = fr.congestion_prefix[i] + topo.node(fr.free[i]).congestion;
    }
    out.total_free += fr.capacity();
    out.racks.push_back(std::move(fr));
  }
  return out;
}

// "4 are free and eligible (by pod: p1 3, p2 1; by rack: r1 2, r2 1, r3 1); not
// eligible: 1 unhealthy, 2 in use".
std::string DescribeCapacity(const Topology& topo, const Eligibility& elig) {
  std::vector<int> pod_free(topo.pods().size(), 0);
  for (const FreeRack& fr : elig.racks) pod_free[fr.pod] += fr.capacity();
  std::vector<PodId> pods;
  for (PodId p = 0; p < static_cast<PodId>(pod_free.size()); ++p) {
    if (pod_free[p] > 0) pods.push_back(p);
  }
  std::stable_sort(pods.begin(), pods.end(),
                   [&](PodId a, PodId b) { return pod_free[a] > pod_free[b]; });
  std::vector<const FreeRack*> racks;
  for (const FreeRack& fr : elig.racks) racks.push_back(&fr);
  std::stable_sort(racks.begin(), racks.end(), [](const FreeRack* a, const FreeRack* b) {
    return a->capacity() > b->capacity();
  });

  auto listed = [](std::vector<std::string> items, absl::string_view noun) {
    std::string text;
    const int shown = std::min<int>(items.size(), kMaxListed);
    text = absl::StrJoin(items.begin(), items.begin() + shown, ", ");
    if (static_cast<int>(items.size()) > shown) {
      absl::StrAppend(&text, " and ", items.size() - shown, " more ", noun);
    }
    return text;
  };
  std::vector<std::string> pod_items, rack_items;
  for (PodId p : pods) pod_items.push_back(absl::StrCat(PodLabel(topo, p), " ", pod_free[p]));
  for (const FreeRack* fr : racks) {
    rack_items.push_back(absl::StrCat(topo.rack(fr->rack).name, " ", fr->capacity()));
  }
  std::string text = absl::StrCat(elig.total_free, " are free and eligible");
  if (elig.total_free > 0) {
    absl::StrAppend(&text, " (by pod: ", listed(pod_items, "pods"),
                    "; by rack: ", listed(rack_items, "racks"), ")");
  }
  std::vector<std::string> reasons;
  auto reason = [&](int count, absl::string_view what) {
    if (count > 0) reasons.push_back(absl::StrCat(count, " ", what));
  };
  reason(elig.unhealthy, "unhealthy");
  reason(elig.drained, "drained");
  reason(elig.in_use, "in use");
  reason(elig.excluded, "excluded");
  reason(elig.few_gpus, "with too few GPUs");
  reason(elig.no_nic, "without an RDMA NIC");
  reason(elig.congested, "above max_congestion");
  if (!reasons.empty()) absl::StrAppend(&text, "; not eligible: ", absl::StrJoin(reasons, ", "));
  return text;
}

// The fewest items of `caps` whose sum reaches `need`, or INT_MAX.
int MinItems(std::vector<int> caps, int need) {
  std::sort(caps.begin(), caps.end(), std::greater<int>());
  int64_t sum = 0;
  for (size_t i = 0; i < caps.size(); ++i) {
    sum += caps[i];
    if (sum >= need) return static_cast<int>(i) + 1;
  }
  return std::numeric_limits<int>::max();
}

// Sum of the k largest of `caps` (all of them when k is larger).
int64_t TopSum(std::vector<int> caps, size_t k) {
  k = std::min(k, caps.size());
  std::partial_sort(caps.begin(), caps.begin() + k, caps.end(), std::greater<int>());
  int64_t sum = 0;
  for (size_t i = 0; i < k; ++i) sum += caps[i];
  return sum;
}

void OrShifted(uint64_t* dst, const uint64_t* src, int shift, int words) {
  const int word_shift = shift / 64;
  const int bit_shift = shift % 64;
  for (int w = words - 1; w >= word_shift; --w) {
    uint64_t v = src[w - word_shift] << bit_shift;
    if (bit_shift != 0 && w - word_shift - 1 >= 0) {
      v |= src[w - word_shift - 1] >> (64 - bit_shift);
    }
    dst[w] |= v;
  }
}

// Positions of exactly k items of `caps` (all >= 1) with the smallest sum >= need;
// among equal sums, earlier items are preferred. Empty when no k items reach `need`.
// A subset-sum over bitsets: O(m * k * (need + max cap) / 64).
std::vector<int> BestFitSubset(absl::Span<const int> caps, int k, int need) {
  const int m = static_cast<int>(caps.size());
  if (k <= 0 || k > m) return {};
  const int max_cap = *std::max_element(caps.begin(), caps.end());
  // The optimum is below need + max_cap (the greedy set is), so larger sums are dropped.
  const int words = (need + max_cap + 63) / 64;
  const size_t row_size = static_cast<size_t>(words);
  std::vector<uint64_t> reach(static_cast<size_t>(m + 1) * (k + 1) * row_size, 0);
  auto row = [&](int i, int j) { return &reach[(static_cast<size_t>(i) * (k + 1) + j) * row_size]; };
  row(0, 0)[0] = 1;
  for (int i = 1; i <= m; ++i) {
    // Rows with fewer than k - (m - i) items can no longer reach k items: skipped.
    const int lo = std::max(0, k - (m - i));
    for (int j = lo; j <= std::min(i, k); ++j) {
      uint64_t* dst = row(i, j);
      std::copy(row(i - 1, j), row(i - 1, j) + words, dst);
      if (j > 0) OrShifted(dst, row(i - 1, j - 1), caps[i - 1], words);
    }
  }
  auto bit = [&](const uint64_t* r, int s) { return (r[s / 64] >> (s % 64)) & 1; };
  int sum = -1;
  for (int s = need; s < words * 64; ++s) {
    if (bit(row(m, k), s)) {
      sum = s;
      break;
    }
  }
  if (sum < 0) return {};
  std::vector<int> chosen;
  int j = k;
  for (int i = m; i >= 1 && j > 0; --i) {
    if (bit(row(i - 1, j), sum)) continue;  // item i-1 not needed
    chosen.push_back(i - 1);
    sum -= caps[i - 1];
    --j;
  }
  std::reverse(chosen.begin(), chosen.end());
  return chosen;
}

// One rack's share of a layout: index into Eligibility::racks and node count.
struct Part {
  int free_rack = 0;
  int count = 0;
  bool operator<(const Part& o) const {
    return std::tie(free_rack, count) < std::tie(o.free_rack, o.count);
  }
};

// A candidate: racks and node counts, expanded into rank order either contiguously
// (rack by rack) or, for pipelines of whole-node stages, column by column: the
// contiguous sequence is read as a grid of `pipeline` rows per column, so the nodes
// running one data index in every stage share racks (pipeline neighbours in one rack)
// at the price of spreading each stage.
struct Layout {
  std::vector<Part> parts;
  bool by_column = false;

  bool operator<(const Layout& o) const {
    return std::tie(by_column, parts) < std::tie(o.by_column, o.parts);
  }
};

// Rank-order position -> index into layout.parts of the part that supplies its node.
std::vector<int> Expand(const Layout& layout, const JobShape& shape) {
  std::vector<int> contiguous;
  for (int i = 0; i < static_cast<int>(layout.parts.size()); ++i) {
    contiguous.insert(contiguous.end(), layout.parts[i].count, i);
  }
  if (!layout.by_column) return contiguous;
  const int stages = shape.pipeline;
  const int per_stage = shape.StageNodes();
  std::vector<int> out(contiguous.size());
  for (int p = 0; p < stages; ++p) {
    for (int d = 0; d < per_stage; ++d) out[p * per_stage + d] = contiguous[d * stages + p];
  }
  return out;
}

struct Score {
  int racks = 0;
  int pods = 0;
  uint64_t cross_rack_bytes = 0;
  uint64_t cross_pod_bytes = 0;
  int max_level = 0;
  int leftover = 0;
  double congestion_sum = 0;

  auto Key() const {
    return std::tie(racks, pods, cross_rack_bytes, cross_pod_bytes, max_level, leftover,
                    congestion_sum);
  }
  bool operator<(const Score& o) const { return Key() < o.Key(); }
};

// The chosen racks and counts, and which part supplies each rank-order position.
struct Chosen {
  std::vector<Part> parts;
  std::vector<int> sequence;
};

class Search {
 public:
  Search(const Topology& topo, const Eligibility& elig, const JobShape& shape,
         const TrafficBytes& weights, int racks_needed)
      : topo_(topo), elig_(elig), shape_(shape), weights_(weights), k_(racks_needed) {
    units_.push_back(1);
    for (int u : {shape.ExpertGroupNodes(), shape.StageNodes()}) {
      if (u > 1 && std::find(units_.begin(), units_.end(), u) == units_.end()) {
        units_.push_back(u);
      }
    }
    structured_ = units_.size() > 1 || shape.pipeline >= 2;
    // Column layouts keep whole columns (one node per stage) in a rack: unit = stages.
    if (shape.pipeline >= 2 && shape.StageNodes() > 1) {
      column_units_.push_back(1);
      column_units_.push_back(shape.pipeline);
      if (std::find(units_.begin(), units_.end(), shape.pipeline) == units_.end()) {
        units_.push_back(shape.pipeline);
      }
    }
  }

  // Adds the candidate layouts on the racks of `pods`.
  void AddCandidates(absl::Span<const PodId> pods) {
    std::vector<int> in_set;
    for (int i = 0; i < static_cast<int>(elig_.racks.size()); ++i) {
      if (std::find(pods.begin(), pods.end(), elig_.racks[i].pod) != pods.end()) {
        in_set.push_back(i);
      }
    }
    for (int unit : units_) {
      auto aligned = [unit, this](int i) { return elig_.racks[i].capacity() / unit * unit; };
      std::vector<int> usable;
      for (int i : in_set) {
        if (aligned(i) > 0) usable.push_back(i);
      }
      std::vector<int> caps;
      for (int i : usable) caps.push_back(aligned(i));
      if (TopSum(caps, k_) < need()) continue;
      if (std::vector<int> set = BestFitUnderCongestion(usable, aligned); !set.empty()) {
        AddRackSet(set);
      }
      AddRackSet(LargestFirst(usable, aligned));
    }
  }

  // Improves the best layout of a small structured job by swapping positions between
  // racks while that lowers the score (racks and counts stay; only traffic can drop).
  void Refine() {
    if (!has_best_ || !structured_ || need() > kMaxRefinedNodes) return;
    std::vector<int>& seq = best_.sequence;
    for (int pass = 0; pass < kMaxRefinePasses; ++pass) {
      bool improved = false;
      for (int i = 0; i < need(); ++i) {
        for (int j = i + 1; j < need(); ++j) {
          if (seq[i] == seq[j]) continue;
          std::swap(seq[i], seq[j]);
          const Score score = Evaluate(best_.parts, seq);
          if (score < best_score_) {
            best_score_ = score;
            improved = true;
          } else {
            std::swap(seq[i], seq[j]);
          }
        }
      }
      if (!improved) break;
    }
  }

  // The best layout found; only when !empty().
  const Chosen& Best() const { return best_; }
  bool empty() const { return !has_best_; }

 private:
  int need() const { return shape_.nodes; }

  // Best fit among racks whose congestion level is as low as any k-rack set allows.
  template <typename Cap>
  std::vector<int> BestFitUnderCongestion(const std::vector<int>& racks, Cap cap) {
    for (int level = 0; level <= kCongestionLevels; ++level) {
      std::vector<int> allowed;
      std::vector<int> caps;
      for (int i : racks) {
        if (elig_.racks[i].level <= level) allowed.push_back(i);
      }
      for (int i : allowed) caps.push_back(cap(i));
      if (static_cast<int>(allowed.size()) < k_ || TopSum(caps, k_) < need()) continue;
      std::stable_sort(allowed.begin(), allowed.end(), [&](int a, int b) {
        const FreeRack& x = elig_.racks[a];
        const FreeRack& y = elig_.racks[b];
        return std::tie(x.level, x.congestion) < std::tie(y.level, y.congestion);
      });
      caps.clear();
      for (int i : allowed) caps.push_back(cap(i));
      std::vector<int> chosen = BestFitSubset(caps, k_, need());
      for (int& c : chosen) c = allowed[c];
      return chosen;
    }
    return {};
  }

  // The k-1 largest racks, then the rack that fits the remainder best.
  template <typename Cap>
  std::vector<int> LargestFirst(std::vector<int> racks, Cap cap) {
    std::stable_sort(racks.begin(), racks.end(), [&](int a, int b) {
      const FreeRack& x = elig_.racks[a];
      const FreeRack& y = elig_.racks[b];
      return std::make_tuple(-cap(a), x.level, x.congestion) <
             std::make_tuple(-cap(b), y.level, y.congestion);
    });
    std::vector<int> chosen(racks.begin(), racks.begin() + (k_ - 1));
    int remaining = need();
    for (int i : chosen) remaining -= cap(i);
    int tail = -1;
    for (size_t t = k_ - 1; t < racks.size(); ++t) {
      const int i = racks[t];
      if (cap(i) < remaining) continue;
      if (tail < 0 || std::make_tuple(elig_.racks[i].level, cap(i), elig_.racks[i].congestion) <
                          std::make_tuple(elig_.racks[tail].level, cap(tail),
                                          elig_.racks[tail].congestion)) {
        tail = i;
      }
    }
    if (tail >= 0) chosen.push_back(tail);
    return chosen;
  }

  // Scores the rack set `set` with node counts aligned to each unit.
  void AddRackSet(const std::vector<int>& set) {
    if (static_cast<int>(set.size()) != k_) return;
    for (int unit : units_) Consider(Layout{Fill(set, unit), false}, unit);
    for (int unit : column_units_) Consider(Layout{Fill(set, unit), true}, unit);
  }

  // Node counts on `set`, largest racks first: whole units first, then the rest.
  std::vector<Part> Fill(std::vector<int> set, int unit) const {
    std::stable_sort(set.begin(), set.end(), [&](int a, int b) {
      return elig_.racks[a].capacity() > elig_.racks[b].capacity();
    });
    std::vector<int> counts(set.size(), 0);
    int remaining = need();
    for (size_t i = 0; i < set.size(); ++i) {
      const int take = std::min(elig_.racks[set[i]].capacity() / unit, remaining / unit) * unit;
      counts[i] = take;
      remaining -= take;
    }
    for (size_t i = 0; i < set.size() && remaining > 0; ++i) {
      const int take = std::min(elig_.racks[set[i]].capacity() - counts[i], remaining);
      counts[i] += take;
      remaining -= take;
    }
    std::vector<Part> parts;
    for (size_t i = 0; i < set.size(); ++i) {
      if (counts[i] > 0) parts.push_back(Part{set[i], counts[i]});
    }
    return parts;
  }

  // Rank order: pods contiguous, racks contiguous; parts whose counts are not whole
  // units go last (in their pod, and their pod last) so unit boundaries stay aligned.
  void Order(std::vector<Part>* layout, int unit) const {
    std::vector<int> pod_total(topo_.pods().size(), 0);
    std::vector<char> pod_ragged(topo_.pods().size(), 0);
    for (const Part& p : *layout) {
      const PodId pod = elig_.racks[p.free_rack].pod;
      pod_total[pod] += p.count;
      if (p.count % unit != 0) pod_ragged[pod] = 1;
    }
    std::sort(layout->begin(), layout->end(), [&](const Part& a, const Part& b) {
      const PodId pa = elig_.racks[a.free_rack].pod;
      const PodId pb = elig_.racks[b.free_rack].pod;
      return std::make_tuple(pod_ragged[pa], -pod_total[pa], pa, a.count % unit != 0, -a.count,
                             a.free_rack) <
             std::make_tuple(pod_ragged[pb], -pod_total[pb], pb, b.count % unit != 0, -b.count,
                             b.free_rack);
    });
  }

  void Consider(Layout layout, int unit) {
    int placed = 0;
    for (const Part& p : layout.parts) placed += p.count;
    if (placed != need()) return;
    Order(&layout.parts, unit);
    if (structured_ && static_cast<int>(layout.parts.size()) <= kMaxPermutedParts) {
      // Where unit boundaries fall depends on the order of the racks: try them all.
      std::vector<Part> parts = layout.parts;
      std::sort(parts.begin(), parts.end());
      do {
        Rate(Layout{parts, layout.by_column});
      } while (std::next_permutation(parts.begin(), parts.end()));
    }
    Rate(std::move(layout));
  }

  void Rate(Layout layout) {
    if (!seen_.insert(layout).second) return;
    std::vector<int> sequence = Expand(layout, shape_);
    const Score score = Evaluate(layout.parts, sequence);
    if (!has_best_ || score < best_score_) {
      has_best_ = true;
      best_score_ = score;
      best_ = Chosen{std::move(layout.parts), std::move(sequence)};
    }
  }

  Score Evaluate(const std::vector<Part>& parts, const std::vector<int>& sequence) {
    Score score;
    score.racks = static_cast<int>(parts.size());
    node_rack_.clear();
    node_pod_.clear();
    for (int part : sequence) {
      const FreeRack& fr = elig_.racks[parts[part].free_rack];
      node_rack_.push_back(fr.rack);
      node_pod_.push_back(fr.pod);
    }
    std::vector<PodId> pods;
    for (const Part& p : parts) {
      const FreeRack& fr = elig_.racks[p.free_rack];
      if (std::find(pods.begin(), pods.end(), fr.pod) == pods.end()) pods.push_back(fr.pod);
      score.max_level = std::max(score.max_level, fr.level);
      score.leftover += fr.capacity() - p.count;
      score.congestion_sum += fr.congestion_prefix[p.count];
    }
    score.pods = static_cast<int>(pods.size());
    const TrafficPrediction traffic = PredictTraffic(shape_, weights_, node_rack_, node_pod_);
    score.cross_rack_bytes = traffic.cross_rack_bytes;
    score.cross_pod_bytes = traffic.cross_pod_bytes;
    return score;
  }

  const Topology& topo_;
  const Eligibility& elig_;
  const JobShape& shape_;
  const TrafficBytes weights_;
  const int k_;
  std::vector<int> units_;         // node-count units of contiguous layouts
  std::vector<int> column_units_;  // and of column layouts (none unless pipelined)
  bool structured_ = false;        // rack order matters beyond keeping racks contiguous
  std::set<Layout> seen_;
  bool has_best_ = false;
  Score best_score_;
  Chosen best_;
  std::vector<int> node_rack_, node_pod_;
};

int64_t Choose(int64_t n, int64_t r, int64_t cap) {
  int64_t result = 1;
  for (int64_t i = 1; i <= r; ++i) {
    result = result * (n - r + i) / i;
    if (result > cap) return cap + 1;
  }
  return result;
}

// The pod sets of the smallest size whose racks can hold the job in k racks.
std::vector<std::vector<PodId>> FeasiblePodSets(const Topology& topo, const Eligibility& elig,
                                                int k, int need, bool single_pod) {
  std::vector<std::vector<int>> pod_caps(topo.pods().size());
  for (const FreeRack& fr : elig.racks) pod_caps[fr.pod].push_back(fr.capacity());
  std::vector<PodId> pods;
  for (PodId p = 0; p < static_cast<PodId>(pod_caps.size()); ++p) {
    if (!pod_caps[p].empty()) pods.push_back(p);
  }
  const int pod_count = static_cast<int>(pods.size());
  auto feasible = [&](const std::vector<PodId>& set) {
    std::vector<int> caps;
    for (PodId p : set) caps.insert(caps.end(), pod_caps[p].begin(), pod_caps[p].end());
    return TopSum(caps, k) >= need;
  };
  const int max_size = single_pod ? 1 : pod_count;
  for (int size = 1; size <= max_size; ++size) {
    std::vector<std::vector<PodId>> found;
    if (Choose(pod_count, size, kMaxPodSets) <= kMaxPodSets) {
      std::vector<int> pick(size);
      for (int i = 0; i < size; ++i) pick[i] = i;
      while (true) {
        std::vector<PodId> set;
        for (int i : pick) set.push_back(pods[i]);
        if (feasible(set)) found.push_back(std::move(set));
        int i = size - 1;
        while (i >= 0 && pick[i] == pod_count - size + i) --i;
        if (i < 0) break;
        ++pick[i];
        for (int j = i + 1; j < size; ++j) pick[j] = pick[j - 1] + 1;
      }
    } else {
      // Too many to enumerate: the pods whose k largest racks hold the most.
      std::vector<std::pair<int64_t, PodId>> by_capacity;
      for (PodId p : pods) by_capacity.push_back({-TopSum(pod_caps[p], k), p});
      std::sort(by_capacity.begin(), by_capacity.end());
      std::vector<PodId> set;
      for (int i = 0; i < size; ++i) set.push_back(by_capacity[i].second);
      if (feasible(set)) found.push_back(std::move(set));
    }
    if (!found.empty()) return found;
  }
  return {};
}

// Up to gpus_per_node GPUs of a node, spread over its NICs (one GPU per NIC per round),
// as positions into hardware.gpus in ascending GPU index.
std::vector<int> SelectGpus(const NodeHardware& hardware, int gpus_per_node) {
  std::vector<int> chosen;
  if (static_cast<int>(hardware.gpus.size()) == gpus_per_node) {
    for (int i = 0; i < gpus_per_node; ++i) chosen.push_back(i);
    return chosen;
  }
  std::vector<std::vector<int>> by_nic(hardware.nics.size() + 1);
  for (int i = 0; i < static_cast<int>(hardware.gpus.size()); ++i) {
    by_nic[hardware.gpus[i].nic + 1].push_back(i);  // bucket 0: no NIC
  }
  for (size_t round = 0; static_cast<int>(chosen.size()) < gpus_per_node; ++round) {
    for (size_t b = 1; b <= by_nic.size() && static_cast<int>(chosen.size()) < gpus_per_node;
         ++b) {
      const auto& bucket = by_nic[b % by_nic.size()];
      if (round < bucket.size()) chosen.push_back(bucket[round]);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

absl::StatusOr<PlacementResponse> BuildResponse(const Topology& topo, const Eligibility& elig,
                                const Chosen& layout, const JobShape& shape,
                                const PlacementRequest& request, const QosClass& qos) {
  PlacementResponse out;
  out.set_job_id(request.job_id());
  out.set_traffic_class(qos.traffic_class);
  // Each part's nodes: the least congested of its rack, in name order.
  std::vector<std::vector<NodeId>> part_nodes;
  for (const Part& p : layout.parts) {
    const FreeRack& fr = elig.racks[p.free_rack];
    std::vector<NodeId> nodes(fr.free.begin(), fr.free.begin() + p.count);
    std::sort(nodes.begin(), nodes.end(),
              [&](NodeId a, NodeId b) { return topo.node(a).name < topo.node(b).name; });
    part_nodes.push_back(std::move(nodes));
  }
  std::vector<NodeId> order;
  std::vector<int> node_rack, node_pod;
  order.reserve(layout.sequence.size());
  node_rack.reserve(layout.sequence.size());
  node_pod.reserve(layout.sequence.size());
  std::vector<int> part_used(layout.parts.size(), 0);
  std::vector<PodId> pods;
  for (int part : layout.sequence) {
    const NodeId id = part_nodes[part][part_used[part]++];
    order.push_back(id);
    node_rack.push_back(topo.node(id).rack);
    node_pod.push_back(topo.node(id).pod);
    if (part_used[part] == 1) out.add_racks(topo.rack(topo.node(id).rack).name);
    if (std::find(pods.begin(), pods.end(), topo.node(id).pod) == pods.end()) {
      pods.push_back(topo.node(id).pod);
    }
  }
  out.set_racks_used(layout.parts.size());
  out.set_pods_used(pods.size());

  const int gpn = shape.gpus_per_node;
  out.mutable_ranks()->Reserve(static_cast<int>(order.size()) * gpn);
  for (size_t i = 0; i < order.size(); ++i) {
    const TopoNode& node = topo.node(order[i]);
    ASSIGN_OR_RETURN(const NodeHardware hardware, topo.Hardware(order[i]));
    const std::string& rack = topo.rack(node.rack).name;
    const std::string& pod = topo.pod(node.pod).name;
    out.add_ring_order(node.name);
    std::vector<int> nics;
    const std::vector<int> gpus = SelectGpus(hardware, gpn);
    for (int j = 0; j < gpn; ++j) {
      const TopoGpu& gpu = hardware.gpus[gpus[j]];
      weft::v1::RankAssignment* a = out.add_ranks();
      a->set_rank(static_cast<uint32_t>(i * gpn + j));
      a->set_node(node.name);
      a->set_gpu_index(gpu.index);
      if (gpu.nic >= 0) {
        a->set_nic(hardware.nics[gpu.nic].device);
        nics.push_back(gpu.nic);
      }
      a->set_rack(rack);
      a->set_pod(pod);
    }
    std::sort(nics.begin(), nics.end());
    nics.erase(std::unique(nics.begin(), nics.end()), nics.end());
    *out.add_node_env() = BuildNodeEnv(node, hardware, nics, qos.traffic_class);
  }

  TrafficBytes bytes{request.gradient_bytes(), request.alltoall_bytes(),
                     request.activation_bytes()};
  const TrafficPrediction traffic = PredictTraffic(shape, bytes, node_rack, node_pod);
  out.set_predicted_cross_rack_bytes(traffic.cross_rack_bytes);
  out.set_predicted_cross_pod_bytes(traffic.cross_pod_bytes);
  out.set_predicted_inter_node_bytes(traffic.inter_node_bytes);
  weft::v1::Parallelism* resolved = out.mutable_layout();
  resolved->set_tensor(shape.tensor);
  resolved->set_pipeline(shape.pipeline);
  resolved->set_data(shape.data);
  resolved->set_expert(shape.expert);
  return out;
}

// Checks constraints against the cluster as built, whatever is free now.
absl::Status CheckConstraintsPossible(const Topology& topo, const PlacementRequest& request,
                                      int need) {
  const auto& c = request.constraints();
  if (c.single_pod()) {
    size_t largest = 0;
    for (const TopoPod& pod : topo.pods()) {
      size_t nodes = 0;
      for (RackId r : pod.racks) nodes += topo.rack(r).nodes.size();
      largest = std::max(largest, nodes);
    }
    if (static_cast<int>(largest) < need) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job '", request.job_id(), "' needs ", need,
          " nodes in a single pod (constraints.single_pod), but the largest pod has ", largest,
          " nodes; drop single_pod or ask for at most ", largest, " nodes"));
    }
  }
  if (c.max_racks() > 0) {
    std::vector<int> sizes;
    for (const TopoRack& rack : topo.racks()) sizes.push_back(rack.nodes.size());
    const int64_t held = TopSum(sizes, c.max_racks());
    if (held < need) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job '", request.job_id(), "' needs ", need, " nodes, but constraints.max_racks is ",
          c.max_racks(), " and the ", c.max_racks(), " largest racks have ", held,
          " nodes; allow at least ", MinItems(sizes, need), " racks"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PlacementResponse> Place(const Topology& topo, const Occupancy& occupancy,
                                        const PlacementRequest& request) {
  if (request.job_id().empty()) {
    return absl::InvalidArgumentError(
        "job_id is empty; every placement needs a job id (it keys the reservation)");
  }
  ASSIGN_OR_RETURN(const QosClass qos, FindQosClass(request.qos_class()));
  int gpus_per_node = static_cast<int>(request.gpus_per_node());
  if (gpus_per_node == 0) {
    if (!topo.UniformGpuCount().has_value()) {
      return absl::InvalidArgumentError(
          "gpus_per_node is 0 and the snapshot's nodes have different GPU counts; say how "
          "many GPUs per node the job uses");
    }
    gpus_per_node = *topo.UniformGpuCount();
    if (gpus_per_node == 0) {
      return absl::FailedPreconditionError("the cluster snapshot's nodes have no GPUs");
    }
  }
  ASSIGN_OR_RETURN(const JobShape shape, ResolveJobShape(request, gpus_per_node));
  const int need = shape.nodes;
  RETURN_IF_ERROR(CheckConstraintsPossible(topo, request, need));
  ASSIGN_OR_RETURN(const Eligibility elig, FindEligible(topo, occupancy, request, shape));

  const std::string job =
      absl::StrCat("job '", request.job_id(), "' needs ", need, need == 1 ? " node" : " nodes",
                   " with ", gpus_per_node, gpus_per_node == 1 ? " GPU" : " GPUs");
  if (elig.total_free < need) {
    return absl::ResourceExhaustedError(
        absl::StrCat(job, "; ", DescribeCapacity(topo, elig)));
  }
  const auto& constraints = request.constraints();
  int k = std::numeric_limits<int>::max();
  if (constraints.single_pod()) {
    std::vector<std::vector<int>> pod_caps(topo.pods().size());
    for (const FreeRack& fr : elig.racks) pod_caps[fr.pod].push_back(fr.capacity());
    int best_pod = -1, best_free = 0;
    for (PodId p = 0; p < static_cast<PodId>(pod_caps.size()); ++p) {
      k = std::min(k, MinItems(pod_caps[p], need));
      int free = 0;
      for (int c : pod_caps[p]) free += c;
      if (free > best_free) best_free = free, best_pod = p;
    }
    if (k == std::numeric_limits<int>::max()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          job, " in a single pod (constraints.single_pod); the most free and eligible in one "
               "pod is ",
          best_free, " (pod ", PodLabel(topo, best_pod), "); ", DescribeCapacity(topo, elig)));
    }
  } else {
    std::vector<int> caps;
    for (const FreeRack& fr : elig.racks) caps.push_back(fr.capacity());
    k = MinItems(caps, need);
  }
  if (constraints.max_racks() > 0 && int64_t{k} > int64_t{constraints.max_racks()}) {
    std::vector<const FreeRack*> racks;
    for (const FreeRack& fr : elig.racks) racks.push_back(&fr);
    std::stable_sort(racks.begin(), racks.end(), [](const FreeRack* a, const FreeRack* b) {
      return a->capacity() > b->capacity();
    });
    racks.resize(constraints.max_racks());
    int held = 0;
    std::vector<std::string> items;
    for (const FreeRack* fr : racks) {
      held += fr->capacity();
      items.push_back(absl::StrCat(topo.rack(fr->rack).name, " ", fr->capacity()));
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        job, " within constraints.max_racks ", constraints.max_racks(), ", but the ",
        constraints.max_racks(), " racks with the most free and eligible nodes hold ", held, " (",
        absl::StrJoin(items, ", "), "); allow ", k,
        " racks or wait for nodes to free up"));
  }

  TrafficBytes weights{request.gradient_bytes(), request.alltoall_bytes(),
                       request.activation_bytes()};
  if (weights.empty()) weights = {kDefaultWeightBytes, kDefaultWeightBytes, kDefaultWeightBytes};
  Search search(topo, elig, shape, weights, k);
  for (const std::vector<PodId>& pods :
       FeasiblePodSets(topo, elig, k, need, constraints.single_pod())) {
    search.AddCandidates(pods);
  }
  search.Refine();
  if (search.empty()) {
    return absl::InternalError(absl::StrCat(job, "; no layout found although ",
                                            DescribeCapacity(topo, elig)));
  }
  return BuildResponse(topo, elig, search.Best(), shape, request, qos);
}

absl::StatusOr<PlacementResponse> Place(const ClusterSnapshot& snapshot,
                                        const Occupancy& occupancy,
                                        const PlacementRequest& request) {
  // A one-shot placement reads GPUs and NICs of the chosen nodes only.
  ASSIGN_OR_RETURN(const Topology topo, Topology::BuildView(snapshot));
  return Place(topo, occupancy, request);
}

}  // namespace weft::placement
