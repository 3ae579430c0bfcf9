// The traffic the tuner evaluates a DCQCN profile on (issue 21): each scenario turns into
// one congestion episode per seed (sim/dcqcn_episode.h) at the fabric's most congested
// port for that traffic, and the episode into the metrics the objective weighs
// (tuning/objective.h). The seed draws what differs between runs of the same traffic on a
// real fabric: each flow's loop delay (its path's RTT), start jitter, ECMP collisions and
// expert skew; a fluid model's identical flows would otherwise stay identical.
//
// The scenarios (StandardScenarios, on 400 Gb/s NICs and ToR ports):
//   incast 4→1, incast 8→1   N senders of 4 MB each into one port, starting within 50 µs
//       (the later ones join a port the first have congested).
//   all-reduce               a 1,024-GPU-class data-parallel ring all-reduce (128 nodes ×
//       8 NICs, one ring per NIC rail, ranks across racks, two channels (QPs) per NIC at
//       most half the line each): per 25 MB gradient bucket each NIC moves
//       2·(1023/1024)·25 MB ≈ 50 MB, 25 MB per channel; ECMP puts 3 (or, one seed in three,
//       4) channels of different NICs on the hottest ToR uplink, and each of those NICs'
//       other channel, on an uncongested path, is a PFC victim (paused with its NIC). They
//       start together (every bucket's all-reduce starts from an idle, recovered NIC). The
//       ring moves at its slowest channel: bus bandwidth = 2 × 25 MB / the last channel's
//       completion, per NIC.
//   MoE all-to-all           a DeepSeek-style expert-parallel dispatch in a 16-node group:
//       the receiver NIC of a hot expert takes h ∈ [2, 4) times its share (drawn per seed)
//       from 15 senders, each of which splits its line rate over its 15 destinations with
//       h to this one (cap C·h/(14 + h)); 1.5 MB·h per flow, a chunk of the phase's
//       100 MB per NIC (87 GB per node per iteration, bench/sim/job_models.h).
//   mixed with storage       2 ring edges of 16 MB and 4 all-to-all flows of 4 MB on a port
//       whose storage class (its own priority, ETS) takes 40 % of the link for a drawn
//       30-70 % of every 200 µs.
// The switch side is the HPCC simulator's firmware-like ECN ramp scaled to 400 Gb/s (Kmin
// 1.6 MB, Kmax 6.4 MB, Pmax 0.2, sim/cc_params.h HpccFabricSide) and PFC on the RoCE
// priority at 3 MB (resume 3 KB below; fabric-facts §5), seen 1 µs later.
//
// Pure functions; thread-safe.
#ifndef WEFT_TUNING_SCENARIOS_H_
#define WEFT_TUNING_SCENARIOS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "sim/cc_params.h"
#include "sim/dcqcn_episode.h"

namespace weft::tuning {

enum class ScenarioKind { kIncast, kAllReduce, kAllToAll, kMixed };

struct Scenario {
  std::string name;
  ScenarioKind kind = ScenarioKind::kIncast;
  int incast_senders = 4;  // kIncast only
  // Its share of the objective against the other scenarios' (tuning/traffic_mix.h
  // WeighScenarios derives them from the running jobs' traffic); 1 each: equal shares.
  double weight = 1;
};

// The four kinds of the issue (incast counted in its 4→1 and 8→1 forms).
std::vector<Scenario> StandardScenarios();

// The switch side every scenario runs against.
struct TuningFabric {
  sim::FabricSide side = sim::HpccFabricSide(400e9);
  double pfc_xoff_bytes = 3e6;
  double pfc_xon_bytes = 3e6 - 3e3;
  double pfc_delay_us = 1;
  double min_feedback_delay_us = 2;  // each flow's τ* is drawn in [min, max)
  double max_feedback_delay_us = 8;
};

// What one episode measured. Lower is better for the times, the pause share and the
// queue; higher for bus bandwidth and fairness.
struct ScenarioMetrics {
  double busbw_gbytes_per_s = 0;  // ring edges (all-reduce, mixed), per NIC; else 0
  double completion_us = 0;       // first start to last completion
  double p99_fct_us = 0;          // of the episode's flows (the slowest of fewer than 100)
  double pause_share = 0;         // of the episode, senders paused by PFC
  double mean_queue_bytes = 0;
  double jain_fairness = 0;       // of the flows' bytes / FCT
};

// The episode `scenario` gives under seed `seed` for a profile already mapped onto the
// model (`mapped`, whose switch side is fabric.side). Pure: same inputs, same episode.
sim::EpisodeConfig BuildEpisode(const Scenario& scenario, const TuningFabric& fabric,
                                const sim::MappedCcParams& mapped, uint64_t seed);

// Maps `profile` (unset fields: firmware defaults), builds and runs the episode and reads
// its metrics. Fails when the profile cannot be mapped (sim/cc_params.h) or the episode
// is refused.
absl::StatusOr<ScenarioMetrics> RunScenario(const Scenario& scenario, const TuningFabric& fabric,
                                            const weft::v1::DcqcnParams& profile, uint64_t seed);

}  // namespace weft::tuning

#endif  // WEFT_TUNING_SCENARIOS_H_
