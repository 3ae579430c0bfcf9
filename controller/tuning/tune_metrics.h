// TuneMetrics: the Prometheus families of the controller's DCQCN tuner, registered on the
// controller's registry. Names are part of the operator interface:
//
//   weft_controller_tune_proposals_total{result}   counter, one per finished search:
//       proposed (better than the profile in force), no_better, dry_run, failed
//   weft_controller_tune_evaluations_total         counter, candidate profiles evaluated
//                                                  in the twin's models
//   weft_controller_tune_last_score                gauge, the newest search's best score
//                                                  against the profile in force (> 0: better)
//   weft_controller_tune_rollouts_total{result}    counter, applied proposals by how their
//       rollout ended: completed, rolled_back
//   weft_controller_tune_searching                 gauge, 1 while a search runs
//   weft_controller_tune_triggers_total{reason}    counter, trigger firings (tuning/
//       trigger.h), whether or not they started a search: mix_shift, kpi_regression
//   weft_controller_tune_mix_divergence            gauge, the newest check's divergence of
//                                                  the jobs' traffic mix from the one the
//                                                  profile in force was tuned for (0 to 1)
//
// Every label value exists from the start (at 0). Thread-safe.
#ifndef WEFT_CONTROLLER_TUNING_TUNE_METRICS_H_
#define WEFT_CONTROLLER_TUNING_TUNE_METRICS_H_

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace weft::controller {

class TuneMetrics {
 public:
  explicit TuneMetrics(prometheus::Registry& registry);
  TuneMetrics(const TuneMetrics&) = delete;
  TuneMetrics& operator=(const TuneMetrics&) = delete;

  // "proposed", "no_better", "dry_run" or "failed".
  void SearchEnded(absl::string_view result, int evaluations, double score);
  void SearchStarted();
  // "completed" or "rolled_back".
  void RolloutEnded(absl::string_view result);
  // "mix_shift" or "kpi_regression".
  void TriggerFired(absl::string_view reason);
  void MixDivergence(double divergence);

 private:
  prometheus::Family<prometheus::Counter>& proposals_;
  prometheus::Counter& evaluations_;
  prometheus::Gauge& last_score_;
  prometheus::Family<prometheus::Counter>& rollouts_;
  prometheus::Gauge& searching_;
  prometheus::Family<prometheus::Counter>& triggers_;
  prometheus::Gauge& mix_divergence_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_TUNING_TUNE_METRICS_H_
