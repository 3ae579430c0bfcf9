#include "tuning/traffic_mix.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::tuning {
namespace {

constexpr double kScenarioFloor = 0.1;

int Index(TrafficKind kind) { return static_cast<int>(kind); }

// The traffic kind each scenario stands for; incast stands for none.
bool KindOfScenario(ScenarioKind scenario, TrafficKind* kind) {
  switch (scenario) {
    case ScenarioKind::kAllReduce:
      *kind = TrafficKind::kAllReduce;
      return true;
    case ScenarioKind::kAllToAll:
      *kind = TrafficKind::kAllToAll;
      return true;
    case ScenarioKind::kMixed:
      *kind = TrafficKind::kStorage;
      return true;
    case ScenarioKind::kIncast:
      return false;
  }
  return false;
}

}  // namespace

const char* TrafficKindName(TrafficKind kind) {
  switch (kind) {
    case TrafficKind::kAllReduce:
      return "all_reduce";
    case TrafficKind::kAllToAll:
      return "all_to_all";
    case TrafficKind::kPipeline:
      return "pipeline";
    case TrafficKind::kStorage:
      return "storage";
  }
  return "unknown";
}

JobTraffic DeclaredTraffic(const weft::v1::PlacementRequest& request,
                           const weft::v1::PlacementResponse& reservation) {
  const double ranks = reservation.ranks_size();
  JobTraffic job;
  job.bytes[Index(TrafficKind::kAllReduce)] = 2.0 * request.gradient_bytes() * ranks;
  job.bytes[Index(TrafficKind::kAllToAll)] = 1.0 * request.alltoall_bytes() * ranks;
  job.bytes[Index(TrafficKind::kPipeline)] = 1.0 * request.activation_bytes() * ranks;
  double total = 0;
  for (double bytes : job.bytes) total += bytes;
  if (total <= 0) {
    TrafficKind kind = TrafficKind::kAllReduce;
    if (request.shape_case() == weft::v1::PlacementRequest::kPattern) {
      if (request.pattern() == weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL) kind = TrafficKind::kAllToAll;
      if (request.pattern() == weft::v1::TRAFFIC_PATTERN_PIPELINE) kind = TrafficKind::kPipeline;
    } else if (request.has_parallelism() && request.parallelism().expert() > 1) {
      kind = TrafficKind::kAllToAll;
    }
    job.bytes[Index(kind)] = total = ranks;
  }
  if (request.qos_class() == "storage") {
    job.bytes = {};
    job.bytes[Index(TrafficKind::kStorage)] = total;
  }
  return job;
}

TrafficMix MixOf(const std::vector<JobTraffic>& jobs) {
  TrafficMix mix;
  std::array<double, kTrafficKinds> bytes{};
  for (const JobTraffic& job : jobs) {
    for (int k = 0; k < kTrafficKinds; ++k) bytes[k] += std::max(0.0, job.bytes[k]);
  }
  for (double b : bytes) mix.bytes_per_iteration += b;
  if (mix.empty()) return mix;
  for (int k = 0; k < kTrafficKinds; ++k) mix.share[k] = bytes[k] / mix.bytes_per_iteration;
  return mix;
}

double Divergence(const TrafficMix& a, const TrafficMix& b) {
  if (a.empty() || b.empty()) return a.empty() && b.empty() ? 0 : 1;
  double sum = 0;
  for (int k = 0; k < kTrafficKinds; ++k) sum += std::abs(a.share[k] - b.share[k]);
  return std::min(1.0, sum / 2);
}

std::vector<Scenario> WeighScenarios(const TrafficMix& mix, std::vector<Scenario> scenarios) {
  if (mix.empty() || scenarios.empty()) {
    for (Scenario& scenario : scenarios) scenario.weight = 1;
    return scenarios;
  }
  std::array<double, kTrafficKinds> share = mix.share;
  share[Index(TrafficKind::kAllReduce)] += share[Index(TrafficKind::kPipeline)];
  share[Index(TrafficKind::kPipeline)] = 0;
  std::array<int, kTrafficKinds> scenarios_of_kind{};
  TrafficKind kind;
  for (const Scenario& scenario : scenarios) {
    if (KindOfScenario(scenario.kind, &kind)) ++scenarios_of_kind[Index(kind)];
  }
  double sum = 0;
  for (Scenario& scenario : scenarios) {
    scenario.weight = kScenarioFloor;
    if (KindOfScenario(scenario.kind, &kind)) {
      scenario.weight += share[Index(kind)] / scenarios_of_kind[Index(kind)];
    }
    sum += scenario.weight;
  }
  for (Scenario& scenario : scenarios) scenario.weight *= scenarios.size() / sum;
  return scenarios;
}

std::string FormatMix(const TrafficMix& mix) {
  if (mix.empty()) return "no declared traffic";
  std::vector<std::pair<double, TrafficKind>> kinds;
  for (int k = 0; k < kTrafficKinds; ++k) {
    if (mix.share[k] >= 0.005) kinds.push_back({mix.share[k], static_cast<TrafficKind>(k)});
  }
  std::stable_sort(kinds.begin(), kinds.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  return absl::StrJoin(kinds, ", ", [](std::string* out, const auto& kind) {
    absl::StrAppend(out, TrafficKindName(kind.second), " ", std::lround(kind.first * 100), "%");
  });
}

}  // namespace weft::tuning
