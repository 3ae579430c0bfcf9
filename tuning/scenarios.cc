#include "tuning/scenarios.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "tuning/rng.h"

namespace weft::tuning {
namespace {

constexpr double kBucketBytes = 25e6;  // a DDP gradient bucket
constexpr int kRingRanks = 1024;

// FNV-1a: a name hash that is the same on every standard library (std::hash is not).
uint64_t NameHash(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

struct Built {
  sim::EpisodeConfig config;
  std::vector<bool> ring_edge;  // per flow: counts toward bus bandwidth
  int channels_per_nic = 1;     // a NIC's ring edges: bus bandwidth counts them all
};

void AddFlow(const TuningFabric& fabric, const sim::MappedCcParams& mapped, Rng& rng,
             double bytes, double start_jitter_us, double max_rate_bps, bool ring_edge,
             Built* built, bool victim = false) {
  sim::EpisodeFlow flow;
  flow.bytes = bytes;
  flow.start_us = rng.Uniform(0, start_jitter_us);
  flow.feedback_delay_us = rng.Uniform(fabric.min_feedback_delay_us, fabric.max_feedback_delay_us);
  flow.max_rate_bps = max_rate_bps;
  flow.initial_alpha = mapped.initial_alpha;
  flow.victim = victim;
  built->config.flows.push_back(flow);
  built->ring_edge.push_back(ring_edge);
}

Built Build(const Scenario& scenario, const TuningFabric& fabric,
            const sim::MappedCcParams& mapped, uint64_t seed) {
  Built b;
  sim::EpisodeConfig& c = b.config;
  c.dcqcn = mapped.params;
  c.step_us = sim::ModelStepUs(mapped.params);
  c.pfc_xoff_bytes = fabric.pfc_xoff_bytes;
  c.pfc_xon_bytes = fabric.pfc_xon_bytes;
  c.pfc_delay_us = fabric.pfc_delay_us;
  c.max_duration_us = 100e3;
  const double link = mapped.params.capacity_bps;
  // The scenario's name keeps seeds of different scenarios apart.
  Rng rng(seed * 0x9e3779b97f4a7c15ULL ^ NameHash(scenario.name));
  switch (scenario.kind) {
    case ScenarioKind::kIncast:
      for (int i = 0; i < scenario.incast_senders; ++i) AddFlow(fabric, mapped, rng, 4e6, 50, 0, false, &b);
      break;
    case ScenarioKind::kAllReduce: {
      // Two channels (QPs) per NIC, each at most half the line; ECMP puts 3 (or, one seed
      // in three, 4) channels of different NICs on the hottest uplink, and each of those
      // NICs' other channel takes an uncongested path: a PFC victim.
      const int colliding = rng.Uniform() < 1.0 / 3 ? 4 : 3;
      b.channels_per_nic = 2;
      const double channel_bytes = 2.0 * (kRingRanks - 1) / kRingRanks * kBucketBytes / 2;
      for (int i = 0; i < colliding; ++i) {
        AddFlow(fabric, mapped, rng, channel_bytes, 5, link / 2, true, &b);
      }
      for (int i = 0; i < colliding; ++i) {
        AddFlow(fabric, mapped, rng, channel_bytes, 5, link / 2, true, &b, /*victim=*/true);
      }
      break;
    }
    case ScenarioKind::kAllToAll: {
      const double hot = rng.Uniform(2, 4);
      for (int i = 0; i < 15; ++i) {
        AddFlow(fabric, mapped, rng, 1.5e6 * hot, 5, link * hot / (14 + hot), false, &b);
      }
      break;
    }
    case ScenarioKind::kMixed: {
      for (int i = 0; i < 2; ++i) AddFlow(fabric, mapped, rng, 16e6, 5, 0, true, &b);
      for (int i = 0; i < 4; ++i) AddFlow(fabric, mapped, rng, 4e6, 20, link / 4, false, &b);
      c.other_class = {.share = 0.4, .period_us = 200, .on_fraction = rng.Uniform(0.3, 0.7),
                       .phase_us = rng.Uniform(0, 200)};
      break;
    }
  }
  return b;
}

}  // namespace

std::vector<Scenario> StandardScenarios() {
  return {{"incast 4→1", ScenarioKind::kIncast, 4},
          {"incast 8→1", ScenarioKind::kIncast, 8},
          {"all-reduce (1,024 GPUs)", ScenarioKind::kAllReduce},
          {"MoE all-to-all", ScenarioKind::kAllToAll},
          {"mixed + storage", ScenarioKind::kMixed}};
}

sim::EpisodeConfig BuildEpisode(const Scenario& scenario, const TuningFabric& fabric,
                                const sim::MappedCcParams& mapped, uint64_t seed) {
  return Build(scenario, fabric, mapped, seed).config;
}

absl::StatusOr<ScenarioMetrics> RunScenario(const Scenario& scenario, const TuningFabric& fabric,
                                            const weft::v1::DcqcnParams& profile, uint64_t seed) {
  ASSIGN_OR_RETURN(const sim::MappedCcParams mapped, sim::MapCcParams(profile, fabric.side));
  const Built built = Build(scenario, fabric, mapped, seed);
  ASSIGN_OR_RETURN(const sim::EpisodeResult r, sim::RunEpisode(built.config));
  ScenarioMetrics m;
  m.completion_us = r.makespan_us;
  m.pause_share = r.pause_share;
  m.mean_queue_bytes = r.mean_queue_bytes;
  m.jain_fairness = r.jain_fairness;
  std::vector<double> fct = r.fct_us;
  std::sort(fct.begin(), fct.end());
  m.p99_fct_us = fct[std::min(fct.size() - 1, static_cast<size_t>(0.99 * fct.size()))];
  double ring_bytes = 0, ring_slowest_us = 0;
  for (size_t i = 0; i < fct.size(); ++i) {
    if (!built.ring_edge[i]) continue;
    ring_bytes = built.config.flows[i].bytes;
    ring_slowest_us = std::max(ring_slowest_us, r.fct_us[i]);
  }
  if (ring_slowest_us > 0) {
    m.busbw_gbytes_per_s = built.channels_per_nic * ring_bytes / (ring_slowest_us * 1e-6) / 1e9;
  }
  return m;
}

}  // namespace weft::tuning
