#include "agent/probe/probe_scheduler.h"

#include <algorithm>
#include <numeric>

namespace weft::agent::probe {

ProbeScheduler::ProbeScheduler(std::vector<double> rates_per_second,
                               double max_probes_per_second, absl::Time start)
    : rates_(std::move(rates_per_second)),
      max_probes_per_second_(max_probes_per_second),
      min_gap_(absl::Seconds(1.0 / max_probes_per_second)) {
  const double sum = std::accumulate(rates_.begin(), rates_.end(), 0.0);
  if (sum > max_probes_per_second_) {
    for (double& rate : rates_) rate *= max_probes_per_second_ / sum;
  }
  const size_t n = rates_.size();
  for (size_t i = 0; i < n; ++i) {
    due_.insert({start + Period(i) * ((static_cast<double>(i) + 0.5) / n), i});
  }
}

absl::Duration ProbeScheduler::Period(size_t flow) const {
  return absl::Seconds(1.0 / (rates_[flow] * scale_));
}

std::pair<size_t, absl::Time> ProbeScheduler::Next() const {
  const auto& [at, flow] = *due_.begin();
  return {flow, std::max(at, last_sent_ + min_gap_)};
}

void ProbeScheduler::Sent(size_t flow, absl::Time sent_at) {
  for (auto it = due_.begin(); it != due_.end(); ++it) {
    if (it->second != flow) continue;
    const absl::Time was_due = it->first;
    due_.erase(it);
    // The next probe keeps the flow's grid unless the send came so late that the grid
    // point is already past: then it counts from the send (no catch-up burst).
    absl::Time next = was_due + Period(flow);
    if (next < sent_at) next = sent_at + Period(flow);
    due_.insert({next, flow});
    break;
  }
  last_sent_ = sent_at;
}

void ProbeScheduler::SetRateScale(double scale) { scale_ = std::clamp(scale, 0.01, 1.0); }

double ProbeScheduler::total_rate() const {
  return std::accumulate(rates_.begin(), rates_.end(), 0.0) * scale_;
}

double ProbeScheduler::flow_rate(size_t flow) const { return rates_[flow] * scale_; }

}  // namespace weft::agent::probe
