#include "tuning/trigger.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace weft::tuning {

absl::Status ValidateTriggerOptions(const TriggerOptions& o) {
  if (!(o.mix_shift_high > 0 && o.mix_shift_high <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mix_shift_high is ", o.mix_shift_high, ": accepted a divergence in (0, 1]"));
  }
  if (!(o.mix_shift_low >= 0 && o.mix_shift_low < o.mix_shift_high)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mix_shift_low is ", o.mix_shift_low, ": accepted 0 to below mix_shift_high (",
        o.mix_shift_high, "), so the trigger re-arms only once the mix has come back"));
  }
  if (o.consecutive_checks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consecutive_checks is ", o.consecutive_checks, ": accepted 1 or more"));
  }
  if (!(o.kpi_regression > 0 && std::isfinite(o.kpi_regression))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kpi_regression is ", o.kpi_regression,
        ": accepted a finite fraction > 0 (0.1: 10 % slower than the baseline)"));
  }
  if (o.cooldown < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cooldown is ", absl::FormatDuration(o.cooldown), ": accepted 0 or more"));
  }
  return absl::OkStatus();
}

std::optional<double> KpiRegression(const std::vector<JobKpi>& jobs) {
  std::vector<double> ratios;
  for (const JobKpi& job : jobs) {
    if (job.iteration_s > 0 && job.baseline_s > 0) {
      ratios.push_back(job.iteration_s / job.baseline_s - 1);
    }
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  return n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

const char* TriggerReasonName(TriggerReason reason) {
  switch (reason) {
    case TriggerReason::kNone:
      return "none";
    case TriggerReason::kMixShift:
      return "mix_shift";
    case TriggerReason::kKpiRegression:
      return "kpi_regression";
  }
  return "none";
}

absl::StatusOr<Trigger> Trigger::Create(TriggerOptions options) {
  if (absl::Status valid = ValidateTriggerOptions(options); !valid.ok()) return valid;
  return Trigger(options);
}

TriggerDecision Trigger::Check(absl::Time now, const TrafficMix& current,
                               const std::vector<JobKpi>& kpis) {
  TriggerDecision decision;
  if (current.empty()) {
    mix_run_ = 0;
  } else {
    const double divergence = Divergence(reference_, current);
    decision.divergence = divergence;
    if (divergence < options_.mix_shift_low) mix_armed_ = true;
    mix_run_ = divergence > options_.mix_shift_high ? mix_run_ + 1 : 0;
  }
  decision.kpi_regression = KpiRegression(kpis);
  if (!decision.kpi_regression) {
    kpi_run_ = 0;
  } else if (*decision.kpi_regression > options_.kpi_regression) {
    ++kpi_run_;
  } else {
    kpi_run_ = 0;
    kpi_armed_ = true;
  }
  if (now < quiet_until_) return decision;
  const bool mix_due = mix_armed_ && mix_run_ >= options_.consecutive_checks;
  const bool kpi_due = kpi_armed_ && kpi_run_ >= options_.consecutive_checks;
  if (!mix_due && !kpi_due) return decision;
  std::string detail;
  if (mix_due) {
    decision.fired = TriggerReason::kMixShift;
    detail = absl::StrFormat(
        "traffic mix diverged %.2f > %.2f on %d checks in a row from the one the profile in "
        "force was tuned for (%s; now %s)",
        *decision.divergence, options_.mix_shift_high, mix_run_, FormatMix(reference_),
        FormatMix(current));
    mix_armed_ = false;
    mix_run_ = 0;
  }
  if (kpi_due) {
    if (!mix_due) decision.fired = TriggerReason::kKpiRegression;
    absl::StrAppend(&detail, detail.empty() ? "" : "; ",
                    absl::StrFormat("median job iteration time %.1f %% above its baseline "
                                    "(threshold %.1f %%) on %d checks in a row",
                                    *decision.kpi_regression * 100,
                                    options_.kpi_regression * 100, kpi_run_));
    kpi_armed_ = false;
    kpi_run_ = 0;
  }
  decision.detail = std::move(detail);
  quiet_until_ = now + options_.cooldown;
  return decision;
}

}  // namespace weft::tuning
