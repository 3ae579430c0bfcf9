#include "controller/tuning/tune_metrics.h"

#include <string>

namespace weft::controller {

TuneMetrics::TuneMetrics(prometheus::Registry& registry)
    : proposals_(prometheus::BuildCounter()
                     .Name("weft_controller_tune_proposals_total")
                     .Help("Finished tuner searches, by result (proposed, no_better, dry_run, "
                           "failed).")
                     .Register(registry)),
      evaluations_(prometheus::BuildCounter()
                       .Name("weft_controller_tune_evaluations_total")
                       .Help("Candidate DCQCN profiles the tuner evaluated in the twin's "
                             "models.")
                       .Register(registry)
                       .Add({})),
      last_score_(prometheus::BuildGauge()
                      .Name("weft_controller_tune_last_score")
                      .Help("The newest search's best score against the profile in force "
                            "(> 0: better).")
                      .Register(registry)
                      .Add({})),
      rollouts_(prometheus::BuildCounter()
                    .Name("weft_controller_tune_rollouts_total")
                    .Help("Applied tuner proposals, by how their rollout ended (completed, "
                          "rolled_back).")
                    .Register(registry)),
      searching_(prometheus::BuildGauge()
                     .Name("weft_controller_tune_searching")
                     .Help("1 while a tuner search runs.")
                     .Register(registry)
                     .Add({})),
      triggers_(prometheus::BuildCounter()
                    .Name("weft_controller_tune_triggers_total")
                    .Help("Tuner trigger firings, by reason (mix_shift, kpi_regression), "
                          "whether or not they started a search.")
                    .Register(registry)),
      mix_divergence_(prometheus::BuildGauge()
                          .Name("weft_controller_tune_mix_divergence")
                          .Help("Divergence (0 to 1) of the running jobs' traffic mix from "
                                "the one the profile in force was tuned for, at the newest "
                                "check.")
                          .Register(registry)
                          .Add({})) {
  for (const char* result : {"proposed", "no_better", "dry_run", "failed"}) {
    proposals_.Add({{"result", result}});
  }
  for (const char* result : {"completed", "rolled_back"}) rollouts_.Add({{"result", result}});
  for (const char* reason : {"mix_shift", "kpi_regression"}) triggers_.Add({{"reason", reason}});
}

void TuneMetrics::TriggerFired(absl::string_view reason) {
  triggers_.Add({{"reason", std::string(reason)}}).Increment();
}

void TuneMetrics::MixDivergence(double divergence) { mix_divergence_.Set(divergence); }

void TuneMetrics::SearchStarted() { searching_.Set(1); }

void TuneMetrics::SearchEnded(absl::string_view result, int evaluations, double score) {
  searching_.Set(0);
  proposals_.Add({{"result", std::string(result)}}).Increment();
  evaluations_.Increment(evaluations);
  last_score_.Set(score);
}

void TuneMetrics::RolloutEnded(absl::string_view result) {
  rollouts_.Add({{"result", std::string(result)}}).Increment();
}

}  // namespace weft::controller
