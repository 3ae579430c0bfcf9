// The traffic mix of the running jobs (issue 21): each kind of traffic's share of the
// bytes the jobs put on the wire per iteration, from what each job declared in its
// placement request (weft.v1.PlacementRequest: pattern or parallelism, bytes per rank,
// QoS class) and the ranks its reservation holds. The tuner weighs its scenarios by it
// (WeighScenarios), and its trigger compares the mix a profile was tuned for with the
// current one (Divergence; tuning/trigger.h).
//
// Per rank and iteration a job moves 2·gradient_bytes of all-reduce (reduce-scatter then
// all-gather each move the gradient once), alltoall_bytes of all-to-all and
// activation_bytes of pipeline send/recv; a job on the "storage" class counts all of its
// bytes as storage. A job that declares no bytes counts one byte per rank on its pattern
// (all-reduce when unspecified), so undeclared jobs weigh by size among themselves and
// next to nothing against declared ones.
//
// Pure functions; thread-safe.
#ifndef WEFT_TUNING_TRAFFIC_MIX_H_
#define WEFT_TUNING_TRAFFIC_MIX_H_

#include <array>
#include <string>
#include <vector>

#include "proto/weft/v1/placement.pb.h"
#include "tuning/scenarios.h"

namespace weft::tuning {

enum class TrafficKind { kAllReduce = 0, kAllToAll, kPipeline, kStorage };
inline constexpr int kTrafficKinds = 4;
// "all_reduce", "all_to_all", "pipeline", "storage": metric labels and proto map keys.
const char* TrafficKindName(TrafficKind kind);

// Bytes per iteration of one job, by kind.
struct JobTraffic {
  std::array<double, kTrafficKinds> bytes{};
};

// What the job of `request` moves per iteration on the ranks of `reservation`.
JobTraffic DeclaredTraffic(const weft::v1::PlacementRequest& request,
                           const weft::v1::PlacementResponse& reservation);

struct TrafficMix {
  std::array<double, kTrafficKinds> share{};  // sums to 1, or all 0 when empty
  double bytes_per_iteration = 0;             // of all the jobs together
  bool empty() const { return bytes_per_iteration <= 0; }
  double of(TrafficKind kind) const { return share[static_cast<int>(kind)]; }
};

// The jobs' mix; empty when they move nothing (or there are none).
TrafficMix MixOf(const std::vector<JobTraffic>& jobs);

// Total variation distance, ½·Σ|a − b| in [0, 1]: unlike Paraleon's KL divergence it is
// finite when a kind is absent from one mix (a new pattern appearing is the shift that
// matters most), symmetric, and reads as the share of bytes that changed kind, so a
// threshold means the same at every mix. An empty mix is "nothing known": 0 against
// another empty one, 1 against any other.
double Divergence(const TrafficMix& a, const TrafficMix& b);

// `scenarios` with their weights set from `mix`: all-reduce scenarios take the
// all-reduce and pipeline shares (both are long point-to-point ring/stage transfers),
// MoE all-to-all the all-to-all share, mixed with storage the storage share, split
// evenly among the scenarios of a kind; every scenario also gets a floor of 0.1 (incast
// only the floor: it is the bursts inside every pattern, never a pattern of its own), so
// no scenario stops counting. Normalised to a mean of 1; an empty mix gives every
// scenario 1 (equal shares, as without a mix).
std::vector<Scenario> WeighScenarios(const TrafficMix& mix, std::vector<Scenario> scenarios);

// "all_to_all 80%, all_reduce 20%" (largest first, kinds under 0.5 % left out), or
// "no declared traffic".
std::string FormatMix(const TrafficMix& mix);

}  // namespace weft::tuning

#endif  // WEFT_TUNING_TRAFFIC_MIX_H_
