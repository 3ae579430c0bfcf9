// When the tuner proposes on its own (issue 21): a Trigger watches, check after check,
// the running jobs' traffic mix (tuning/traffic_mix.h) against the mix the profile in
// force was tuned for, and the jobs' KPIs against their own baselines, and says when a
// search is due:
//   mix_shift       the divergence between the reference mix and the current one was
//                   above mix_shift_high on `consecutive_checks` checks in a row. It then
//                   stays disarmed until a check sees the divergence below mix_shift_low,
//                   so a mix that hovers around the threshold fires once, not on and off.
//   kpi_regression  the jobs' median iteration time, each relative to its own baseline
//                   (its first iteration on its reservation), was more than
//                   kpi_regression above it on `consecutive_checks` checks in a row; it
//                   re-arms once a check sees the regression back at or under the threshold.
// After any firing nothing fires for `cooldown`. A check without evidence (no declared
// traffic; no job with a KPI) breaks that condition's run of checks and neither fires
// nor re-arms it. The reference starts empty ("tuned for nothing known"), against which
// any traffic diverges by 1; the caller moves it to the mix a proposal was tuned for once
// that profile is in force (SetReference).
//
// Deterministic: time comes only from Check's argument. Not thread-safe (the caller's
// lock guards it).
//
// Example:
//   ASSIGN_OR_RETURN(Trigger trigger, Trigger::Create(options));
//   TriggerDecision decision = trigger.Check(clock->Now(), MixOf(jobs), kpis);
//   if (decision.fired != TriggerReason::kNone) ... propose, recording decision.detail ...
#ifndef WEFT_TUNING_TRIGGER_H_
#define WEFT_TUNING_TRIGGER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tuning/traffic_mix.h"

namespace weft::tuning {

struct TriggerOptions {
  double mix_shift_high = 0.2;  // divergence, in [0, 1]
  double mix_shift_low = 0.1;   // re-arms below this; 0 <= low < high
  int consecutive_checks = 3;
  double kpi_regression = 0.1;  // 0.1: the median job runs 10 % slower than its baseline
  absl::Duration cooldown = absl::Minutes(30);
};

// InvalidArgument naming the field, its value and what is accepted.
absl::Status ValidateTriggerOptions(const TriggerOptions& options);

// One job's KPI: its newest iteration time against its own baseline.
struct JobKpi {
  double iteration_s = 0;
  double baseline_s = 0;
};

// The median over jobs with both times > 0 of iteration_s / baseline_s − 1 (0.25: a
// quarter slower); nullopt when no job has both.
std::optional<double> KpiRegression(const std::vector<JobKpi>& jobs);

enum class TriggerReason { kNone, kMixShift, kKpiRegression };
// "none", "mix_shift", "kpi_regression": metric labels and the proposal's record.
const char* TriggerReasonName(TriggerReason reason);

struct TriggerDecision {
  TriggerReason fired = TriggerReason::kNone;
  std::string detail;  // when fired: the numbers, e.g. "traffic mix diverged 0.80 > 0.20 ..."
  std::optional<double> divergence;      // this check's; nullopt without declared traffic
  std::optional<double> kpi_regression;  // this check's; nullopt without KPIs
};

class Trigger {
 public:
  static absl::StatusOr<Trigger> Create(TriggerOptions options);

  // One check at `now` on the current mix and KPIs. When both conditions are due at
  // once, it fires mix_shift (a new mix is the likelier cause of the regression), says
  // both in the detail, and both disarm.
  TriggerDecision Check(absl::Time now, const TrafficMix& current,
                        const std::vector<JobKpi>& kpis);

  // The mix the profile in force was tuned for.
  void SetReference(const TrafficMix& mix) { reference_ = mix; }
  const TrafficMix& reference() const { return reference_; }
  const TriggerOptions& options() const { return options_; }

 private:
  explicit Trigger(TriggerOptions options) : options_(options) {}

  TriggerOptions options_;
  TrafficMix reference_;
  int mix_run_ = 0;
  bool mix_armed_ = true;
  int kpi_run_ = 0;
  bool kpi_armed_ = true;
  absl::Time quiet_until_ = absl::InfinitePast();
};

}  // namespace weft::tuning

#endif  // WEFT_TUNING_TRIGGER_H_
