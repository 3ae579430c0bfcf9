// What the tuner optimises: a profile's metrics on every scenario and seed
// (tuning/scenarios.h), against the baseline profile's on the same scenarios and seeds,
// weighed into one score (higher is better; the baseline scores 0). Each scenario
// contributes the metrics that matter for its traffic:
//   incast       p99 FCT, Jain fairness       all-reduce   bus bandwidth
//   all-to-all   completion time              mixed        p99 FCT and bus bandwidth
// and every scenario its PFC pause share and mean queue. A ratio metric adds
// weight·log(candidate/baseline) (inverted where lower is better), so +10 % counts the
// same on every scenario; the pause share adds weight·(baseline − candidate) in points of
// time, fairness weight·(candidate − baseline)/baseline; a loss in bus bandwidth,
// completion or p99 FCT counts regression_penalty times. Scenario means over the seeds
// are compared, and the score is the mean over scenarios weighted by Scenario::weight
// (equal by default; tuning/traffic_mix.h weighs them by the running jobs' traffic).
//
// Evaluator runs the scenarios and counts evaluations. Not thread-safe (one search owns
// one); the functions are pure and thread-safe.
#ifndef WEFT_TUNING_OBJECTIVE_H_
#define WEFT_TUNING_OBJECTIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "tuning/scenarios.h"

namespace weft::tuning {

// The policy's weights (defaults: throughput and completion first, like Paraleon's 0.6 on
// throughput when flows are large; fabric-facts §7). The controller would read them from
// the policy; until the policy has a tuning section, callers set them.
struct ObjectiveWeights {
  double busbw = 1.0;
  double completion = 1.0;
  double p99_fct = 0.5;
  double pause_share = 0.5;
  double queue = 0.1;
  double fairness = 0.5;
  // A loss in bus bandwidth, completion or p99 FCT counts this many times its size: the
  // rollout's KPI judge rolls a throughput regression back whatever else improved, so
  // the tuner should not trade one for pauses or queue.
  double regression_penalty = 3.0;
};

struct ScenarioEvaluation {
  std::string scenario;
  ScenarioKind kind = ScenarioKind::kIncast;
  double weight = 1;  // the scenario's (Scenario::weight)
  std::vector<ScenarioMetrics> per_seed;
  ScenarioMetrics mean;
  ScenarioMetrics stddev;  // over the seeds (population)
};

struct ProfileEvaluation {
  weft::v1::DcqcnParams profile;
  std::vector<ScenarioEvaluation> scenarios;
  double score = 0;  // against the evaluator's baseline; 0 for the baseline itself
};

// The score of `candidate` against `baseline` (same scenarios, in the same order).
double Score(const std::vector<ScenarioEvaluation>& candidate,
             const std::vector<ScenarioEvaluation>& baseline, const ObjectiveWeights& weights);

struct EvaluatorOptions {
  TuningFabric fabric;
  std::vector<Scenario> scenarios = StandardScenarios();
  std::vector<uint64_t> seeds = {1, 2, 3};
  ObjectiveWeights weights;
};

class Evaluator {
 public:
  // Evaluates `baseline` once (not counted). Fails on no scenario or seed, or when the
  // baseline cannot be mapped onto the model.
  static absl::StatusOr<Evaluator> Create(EvaluatorOptions options,
                                          const weft::v1::DcqcnParams& baseline);

  // Every scenario on every seed for `profile`, scored against the baseline. Counts one
  // evaluation (of scenarios × seeds episodes).
  absl::StatusOr<ProfileEvaluation> Evaluate(const weft::v1::DcqcnParams& profile);

  const ProfileEvaluation& baseline() const { return baseline_; }
  const EvaluatorOptions& options() const { return options_; }
  int evaluations() const { return evaluations_; }

 private:
  explicit Evaluator(EvaluatorOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::vector<ScenarioEvaluation>> RunAll(const weft::v1::DcqcnParams& profile) const;

  EvaluatorOptions options_;
  ProfileEvaluation baseline_;
  int evaluations_ = 0;
};

}  // namespace weft::tuning

#endif  // WEFT_TUNING_OBJECTIVE_H_
