// CpuBudget: keeps the prober's CPU use under a share of one core (issue 22: under 2 %
// per node). Fed the prober threads' CPU seconds now and then, it answers the rate
// scale the scheduler should use: over budget, the rate drops in proportion; well
// under it (below half), the rate doubles back towards 1. Pure logic.
//
// Thread-compatible.
#ifndef WEFT_AGENT_PROBE_CPU_BUDGET_H_
#define WEFT_AGENT_PROBE_CPU_BUDGET_H_

#include <optional>

#include "absl/time/time.h"

namespace weft::agent::probe {

class CpuBudget {
 public:
  // `max_share` of one core, in (0, 1]. Decisions are made over spans of at least
  // `span` of wall time.
  explicit CpuBudget(double max_share, absl::Duration span = absl::Seconds(1));

  // `cpu_seconds`: the prober's CPU time so far (monotonic). Returns the rate scale.
  double Update(double cpu_seconds, absl::Time now);
  double scale() const { return scale_; }
  // The share of a core measured over the last completed span.
  double last_share() const { return last_share_; }

 private:
  const double max_share_;
  const absl::Duration span_;
  std::optional<std::pair<double, absl::Time>> span_start_;
  double scale_ = 1.0;
  double last_share_ = 0.0;
};

// CPU seconds this process's calling thread has used (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_CPU_BUDGET_H_
