#include "tuning/objective.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::tuning {
namespace {

// log(better / worse), 0 when either side is not positive (a metric the scenario lacks).
double LogGain(double better, double worse) {
  return better > 0 && worse > 0 ? std::log(better / worse) : 0;
}

template <typename Field>
void Spread(const std::vector<ScenarioMetrics>& runs, Field field, ScenarioMetrics* mean,
            ScenarioMetrics* stddev) {
  double sum = 0, sum_sq = 0;
  for (const ScenarioMetrics& m : runs) sum += m.*field, sum_sq += (m.*field) * (m.*field);
  const double n = runs.size();
  mean->*field = sum / n;
  stddev->*field = std::sqrt(std::max(0.0, sum_sq / n - (sum / n) * (sum / n)));
}

}  // namespace

double Score(const std::vector<ScenarioEvaluation>& candidate,
             const std::vector<ScenarioEvaluation>& baseline, const ObjectiveWeights& w) {
  if (candidate.empty() || candidate.size() != baseline.size()) return 0;
  double total = 0, total_weight = 0;
  // The primary metrics' terms: losses weigh regression_penalty times.
  auto primary = [&](double weight, double gain) {
    return weight * (gain < 0 ? w.regression_penalty * gain : gain);
  };
  for (size_t s = 0; s < candidate.size(); ++s) {
    const ScenarioMetrics& c = candidate[s].mean;
    const ScenarioMetrics& b = baseline[s].mean;
    double score = w.pause_share * (b.pause_share - c.pause_share) +
                   w.queue * LogGain(b.mean_queue_bytes + 1e3, c.mean_queue_bytes + 1e3);
    switch (candidate[s].kind) {
      case ScenarioKind::kIncast:
        score += primary(w.p99_fct, LogGain(b.p99_fct_us, c.p99_fct_us));
        if (b.jain_fairness > 0) {
          score += w.fairness * (c.jain_fairness - b.jain_fairness) / b.jain_fairness;
        }
        break;
      case ScenarioKind::kAllReduce:
        score += primary(w.busbw, LogGain(c.busbw_gbytes_per_s, b.busbw_gbytes_per_s));
        break;
      case ScenarioKind::kAllToAll:
        score += primary(w.completion, LogGain(b.completion_us, c.completion_us));
        break;
      case ScenarioKind::kMixed:
        score += primary(w.p99_fct, LogGain(b.p99_fct_us, c.p99_fct_us)) +
                 primary(w.busbw, LogGain(c.busbw_gbytes_per_s, b.busbw_gbytes_per_s));
        break;
    }
    total += candidate[s].weight * score;
    total_weight += candidate[s].weight;
  }
  return total_weight > 0 ? total / total_weight : 0;
}

absl::StatusOr<Evaluator> Evaluator::Create(EvaluatorOptions options,
                                            const weft::v1::DcqcnParams& baseline) {
  if (options.scenarios.empty()) {
    return absl::InvalidArgumentError("scenarios is empty: accepted at least one scenario");
  }
  for (const Scenario& scenario : options.scenarios) {
    if (!(scenario.weight >= 0 && std::isfinite(scenario.weight))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scenario '", scenario.name, "' has weight ", scenario.weight,
          ": accepted a finite weight >= 0"));
    }
  }
  if (options.seeds.empty()) return absl::InvalidArgumentError("seeds is empty: accepted at least one seed");
  Evaluator evaluator(std::move(options));
  ASSIGN_OR_RETURN(evaluator.baseline_.scenarios, evaluator.RunAll(baseline));
  evaluator.baseline_.profile = baseline;
  return evaluator;
}

absl::StatusOr<std::vector<ScenarioEvaluation>> Evaluator::RunAll(
    const weft::v1::DcqcnParams& profile) const {
  std::vector<ScenarioEvaluation> out;
  for (const Scenario& scenario : options_.scenarios) {
    ScenarioEvaluation e;
    e.scenario = scenario.name;
    e.kind = scenario.kind;
    e.weight = scenario.weight;
    for (uint64_t seed : options_.seeds) {
      ASSIGN_OR_RETURN(ScenarioMetrics m, RunScenario(scenario, options_.fabric, profile, seed));
      e.per_seed.push_back(m);
    }
    Spread(e.per_seed, &ScenarioMetrics::busbw_gbytes_per_s, &e.mean, &e.stddev);
    Spread(e.per_seed, &ScenarioMetrics::completion_us, &e.mean, &e.stddev);
    Spread(e.per_seed, &ScenarioMetrics::p99_fct_us, &e.mean, &e.stddev);
    Spread(e.per_seed, &ScenarioMetrics::pause_share, &e.mean, &e.stddev);
    Spread(e.per_seed, &ScenarioMetrics::mean_queue_bytes, &e.mean, &e.stddev);
    Spread(e.per_seed, &ScenarioMetrics::jain_fairness, &e.mean, &e.stddev);
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<ProfileEvaluation> Evaluator::Evaluate(const weft::v1::DcqcnParams& profile) {
  ++evaluations_;
  ProfileEvaluation e;
  e.profile = profile;
  ASSIGN_OR_RETURN(e.scenarios, RunAll(profile));
  e.score = Score(e.scenarios, baseline_.scenarios, options_.weights);
  return e;
}

}  // namespace weft::tuning
