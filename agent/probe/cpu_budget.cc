#include "agent/probe/cpu_budget.h"

#include <time.h>

#include <algorithm>

namespace weft::agent::probe {

CpuBudget::CpuBudget(double max_share, absl::Duration span)
    : max_share_(max_share), span_(span) {}

double CpuBudget::Update(double cpu_seconds, absl::Time now) {
  if (!span_start_.has_value()) {
    span_start_ = {cpu_seconds, now};
    return scale_;
  }
  const absl::Duration wall = now - span_start_->second;
  if (wall < span_) return scale_;
  last_share_ = (cpu_seconds - span_start_->first) / absl::ToDoubleSeconds(wall);
  span_start_ = {cpu_seconds, now};
  if (last_share_ > max_share_) {
    scale_ = std::max(0.01, scale_ * max_share_ / last_share_);
  } else if (last_share_ < max_share_ / 2 && scale_ < 1.0) {
    scale_ = std::min(1.0, scale_ * 2);
  }
  return scale_;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace weft::agent::probe
