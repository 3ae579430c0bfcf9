// ProbeScheduler: when the prober sends each flow's next probe. Pure logic over
// absl::Time, so tests drive it without a clock.
//
// Each flow has its own rate; the node's total is held under a hard cap two ways:
// the rates are scaled down together when their sum exceeds max_probes_per_second,
// and no two probes are ever closer than 1 / max_probes_per_second, so no interval
// of length T holds more than T · cap + 1 probes, whatever the rates. Flows start
// spread over their first period (flow i of n at (i + ½)/n of it), so n flows at the
// same rate probe evenly interleaved instead of in bursts. A rate scale (0..1], set
// by the CPU budget (agent/probe/cpu_budget.h), slows everything down together.
//
// Thread-compatible.
#ifndef WEFT_AGENT_PROBE_PROBE_SCHEDULER_H_
#define WEFT_AGENT_PROBE_PROBE_SCHEDULER_H_

#include <cstddef>
#include <set>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace weft::agent::probe {

class ProbeScheduler {
 public:
  // `rates_per_second`: one entry per flow, each > 0. `max_probes_per_second` > 0.
  ProbeScheduler(std::vector<double> rates_per_second, double max_probes_per_second,
                 absl::Time start);

  bool empty() const { return due_.empty(); }
  // The flow whose probe is due next and when (not before the spacing the cap
  // allows). Requires !empty().
  std::pair<size_t, absl::Time> Next() const;
  // Records that the flow Next() named was probed at `sent_at`.
  void Sent(size_t flow, absl::Time sent_at);

  // Scales every rate by `scale` (clamped to [0.01, 1]) from now on.
  void SetRateScale(double scale);
  double rate_scale() const { return scale_; }
  // Probes per second of all flows together, after the cap and the scale.
  double total_rate() const;
  // The rate of one flow, after the cap and the scale.
  double flow_rate(size_t flow) const;

 private:
  absl::Duration Period(size_t flow) const;

  std::vector<double> rates_;  // after the cap
  double max_probes_per_second_;
  absl::Duration min_gap_;
  double scale_ = 1.0;
  std::set<std::pair<absl::Time, size_t>> due_;
  absl::Time last_sent_ = absl::InfinitePast();
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PROBE_SCHEDULER_H_
