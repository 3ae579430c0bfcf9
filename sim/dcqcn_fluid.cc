#include "sim/dcqcn_fluid.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

absl::Status CheckRange(const char* name, double value, double low, double high,
                        bool low_open = false) {
  const bool ok = std::isfinite(value) && (low_open ? value > low : value >= low) && value <= high;
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, " = ", value, " is out of range: accepted ",
                                                 low_open ? "(" : "[", low, ", ", high, "]"));
}

// The rate (per packet sent) of events that fire after `count` unmarked packets, the
// byte counter: p / ((1 - p)^(-count) - 1), with log_keep = log(1 - p); 1/count at p = 0.
double CounterEventsPerPacket(double p, double log_keep, double count) {
  if (p <= 0) return 1 / count;
  if (p >= 1) return 0;  // every packet is marked: no counter completes
  return p / std::expm1(-count * log_keep);
}

// The rate (per second) of rate-increase timer events for a flow sending rate_pps: the
// timer completes after T·R unmarked packets, R·p / ((1 - p)^(-T·R) - 1); 1/T at p = 0,
// and p / (-T·log(1 - p)) as R → 0 (a flow that has just started, whose delayed rate is 0).
double TimerEventsPerSecond(double rate_pps, double p, double log_keep, double timer_s) {
  if (p <= 0) return 1 / timer_s;
  if (p >= 1) return 0;
  const double exponent = -timer_s * rate_pps * log_keep;
  if (exponent < 1e-12) return p / (-timer_s * log_keep);
  return rate_pps * p / std::expm1(exponent);
}

// 1 - (1 - p)^n: the probability that at least one of n packets is marked.
double AnyMarked(double p, double log_keep, double n) {
  if (p <= 0 || n <= 0) return 0;
  if (p >= 1) return 1;
  return -std::expm1(n * log_keep);
}

// (1 - p)^n: the probability that none of n packets is marked.
double NoneMarked(double p, double log_keep, double n) {
  if (p <= 0 || n <= 0) return 1;
  if (p >= 1) return 0;
  return std::exp(n * log_keep);
}

}  // namespace

DcqcnParams Conext16AnalysisParams(double feedback_delay_us) {
  DcqcnParams params;
  params.above_kmax = AboveKmax::kExtendRamp;
  params.feedback_delay_us = feedback_delay_us;
  return params;
}

absl::Status ValidateParams(const DcqcnParams& params) {
  struct Range {
    const char* name;
    double value, low, high;
    bool low_open;
    const char* note;
  };
  const DcqcnParams& p = params;
  const Range ranges[] = {
      {"capacity_bps", p.capacity_bps, 0, 1e13, true, ""},
      {"kmin_bytes", p.kmin_bytes, 0, 1e9, false, ""},
      {"kmax_bytes", p.kmax_bytes, p.kmin_bytes, 1e9, true, " (kmax_bytes must exceed kmin_bytes)"},
      {"pmax", p.pmax, 0, 1, true, ""},
      {"g", p.g, 0, 1, true, ""},
      {"tau_us", p.tau_us, 0, 1e6, true, ""},
      {"tau_prime_us", p.tau_prime_us, 0, 1e6, true, ""},
      {"timer_us", p.timer_us, 0, 1e6, true, ""},
      {"byte_counter_bytes", p.byte_counter_bytes, 0, 1e12, true, ""},
      {"fast_recovery_steps", static_cast<double>(p.fast_recovery_steps), 0, 1000, false, ""},
      {"rate_ai_bps", p.rate_ai_bps, 0, p.capacity_bps, true, " (at most capacity_bps)"},
      {"feedback_delay_us", p.feedback_delay_us, 0, 1e5, false, ""},
      // 0.125 bytes = one bit: the unit of the bit-counting version of the authors' script.
      {"packet_bytes", p.packet_bytes, 0.125, 65536, false, ""},
      {"max_cut_fraction", p.max_cut_fraction, 0, 1, false, " (1 − rp_min_dec_fac/100)"},
      {"rate_hai_bps", p.rate_hai_bps, 0, p.capacity_bps, false, " (0 = no hyper increase)"},
  };
  for (const Range& r : ranges) {
    if (absl::Status s = CheckRange(r.name, r.value, r.low, r.high, r.low_open); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(s.message(), r.note));
    }
  }
  return absl::OkStatus();
}

double MarkingProbability(const DcqcnParams& params, double queue_bytes) {
  if (queue_bytes <= params.kmin_bytes) return 0;
  if (queue_bytes > params.kmax_bytes && params.above_kmax == AboveKmax::kMarkAll) return 1;
  return std::min(1.0, (queue_bytes - params.kmin_bytes) / (params.kmax_bytes - params.kmin_bytes) *
                           params.pmax);
}

absl::StatusOr<FixedPoint> ClosedFormFixedPoint(const DcqcnParams& params, int num_flows) {
  if (absl::Status s = ValidateParams(params); !s.ok()) return s;
  if (num_flows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_flows = ", num_flows, " is out of range: accepted [1, inf)"));
  }
  const double n = num_flows;
  const double packet_bits = params.packet_bytes * 8;
  const double c = params.capacity_bps / packet_bits;    // packets/s
  const double r_ai = params.rate_ai_bps / packet_bits;  // packets/s
  const double b = params.byte_counter_bytes / params.packet_bytes;
  const double t = params.timer_us * 1e-6;
  const double tau_prime = params.tau_prime_us * 1e-6;
  const double tau = params.tau_us * 1e-6;
  const double f = params.fast_recovery_steps;
  const double rate = c / n;
  const double increase = 1 / b + n / (t * c);
  FixedPoint fp;
  fp.rate_bps = params.capacity_bps / n;
  fp.approx_marking_probability =
      std::cbrt(r_ai * n * n / (tau_prime * c * c) * increase * increase);
  // LHS(p) - RHS of a²α/((b + d)(c + e)) = τ²·R_AI·R_C, increasing in p.
  auto excess = [&](double p) {
    const double log_keep = std::log1p(-p);
    const double a = AnyMarked(p, log_keep, tau * rate);
    const double alpha = AnyMarked(p, log_keep, tau_prime * rate);
    const double bb = CounterEventsPerPacket(p, log_keep, b);
    const double dd = TimerEventsPerSecond(rate, p, log_keep, t) / rate;
    const double cc = bb * NoneMarked(p, log_keep, f * b);
    const double ee = dd * NoneMarked(p, log_keep, f * t * rate);
    return a * a * alpha / ((bb + dd) * (cc + ee)) - tau * tau * r_ai * rate;
  };
  double low = 1e-15, high = 1 - 1e-9;  // excess(low) < 0 < excess(high) in range
  for (int i = 0; i < 200 && high / low > 1 + 1e-12; ++i) {
    const double mid = std::sqrt(low * high);  // bisect on a log scale: p* spans decades
    (excess(mid) < 0 ? low : high) = mid;
  }
  fp.marking_probability = std::sqrt(low * high);
  auto queue_at = [&](double p) {
    return p / params.pmax * (params.kmax_bytes - params.kmin_bytes) + params.kmin_bytes;
  };
  fp.queue_bytes = queue_at(fp.marking_probability);
  fp.approx_queue_bytes = queue_at(fp.approx_marking_probability);
  fp.alpha =
      AnyMarked(fp.marking_probability, std::log1p(-fp.marking_probability), tau_prime * rate);
  fp.beyond_ramp = fp.marking_probability > params.pmax;
  return fp;
}

ModelUnits ToModelUnits(const DcqcnParams& params) {
  const double packet_bits = params.packet_bytes * 8;
  ModelUnits units;
  units.capacity_pps = params.capacity_bps / packet_bits;
  units.rate_ai_pps = params.rate_ai_bps / packet_bits;
  units.byte_counter_packets = params.byte_counter_bytes / params.packet_bytes;
  units.kmin_packets = params.kmin_bytes / params.packet_bytes;
  units.kmax_packets = params.kmax_bytes / params.packet_bytes;
  units.tau_s = params.tau_us * 1e-6;
  units.tau_prime_s = params.tau_prime_us * 1e-6;
  units.timer_s = params.timer_us * 1e-6;
  units.fast_recovery_steps = params.fast_recovery_steps;
  units.g = params.g;
  units.max_cut_fraction = params.max_cut_fraction;
  units.rate_hai_pps = params.rate_hai_bps / packet_bits;
  units.target_clamp = params.target_clamp;
  return units;
}

MarkingTerms MarkingTermsAt(const ModelUnits& units, double p) {
  MarkingTerms terms;
  terms.p = p;
  terms.log_keep = (p > 0 && p < 1) ? std::log1p(-p) : 0;
  terms.byte_events_per_packet =
      CounterEventsPerPacket(p, terms.log_keep, units.byte_counter_packets);
  terms.byte_after_recovery =
      NoneMarked(p, terms.log_keep, units.fast_recovery_steps * units.byte_counter_packets);
  return terms;
}

DcqcnFlowState FlowDerivatives(const ModelUnits& units, const MarkingTerms& marking,
                               const DcqcnFlowState& state, double delayed_rate_pps) {
  const double p = marking.p, log_keep = marking.log_keep, r_hat = delayed_rate_pps;
  const double r_c = state.rate_current_pps, r_t = state.rate_target_pps;
  const double cut = AnyMarked(p, log_keep, units.tau_s * r_hat);  // a CNP in the last τ
  const double alpha_marked = AnyMarked(p, log_keep, units.tau_prime_s * r_hat);
  const double byte_events = marking.byte_events_per_packet * r_hat;  // per second
  const double timer_events = TimerEventsPerSecond(r_hat, p, log_keep, units.timer_s);
  const double timer_after_recovery =
      NoneMarked(p, log_keep, units.fast_recovery_steps * units.timer_s * r_hat);
  // The share of cuts that also set R_T ← R_C (TargetClamp).
  double clamp = 1;
  if (units.target_clamp == TargetClamp::kNever) {
    clamp = 0;
  } else if (units.target_clamp == TargetClamp::kAfterTimerIncrease && cut > 0) {
    clamp = -std::expm1(-timer_events * units.tau_s / cut);
  }
  DcqcnFlowState d;
  d.alpha = units.g / units.tau_prime_s * (alpha_marked - state.alpha);
  d.rate_target_pps = -(r_t - r_c) / units.tau_s * cut * clamp +
                      units.rate_ai_pps * marking.byte_after_recovery * byte_events +
                      units.rate_ai_pps * timer_after_recovery * timer_events;
  if (units.rate_hai_pps > 0) {
    // Both stages past F: each event adds R_HAI where the paper's model adds R_AI.
    const double both = std::min(marking.byte_after_recovery, timer_after_recovery);
    d.rate_target_pps += (units.rate_hai_pps - units.rate_ai_pps) * both * (byte_events + timer_events);
  }
  // One cut per CNP: α/2 of R_C, at most max_cut_fraction of it (rp_min_dec_fac).
  const double cut_fraction = std::min(state.alpha / 2, units.max_cut_fraction);
  d.rate_current_pps = -r_c * cut_fraction / units.tau_s * cut +
                       (r_t - r_c) / 2 * byte_events + (r_t - r_c) / 2 * timer_events;
  return d;
}

std::vector<FlowStart> UniformFlows(int num_flows, double rate_bps) {
  std::vector<FlowStart> flows(std::max(num_flows, 0));
  for (FlowStart& flow : flows) flow.initial_rate_bps = rate_bps;
  return flows;
}

absl::StatusOr<DcqcnFluidModel> DcqcnFluidModel::Create(const DcqcnParams& params,
                                                        std::vector<FlowStart> flows,
                                                        double step_us) {
  if (absl::Status s = ValidateParams(params); !s.ok()) return s;
  if (flows.empty()) return absl::InvalidArgumentError("flows is empty: accepted at least 1 flow");
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowStart& f = flows[i];
    const std::string prefix = absl::StrCat("flows[", i, "].");
    for (absl::Status s :
         {CheckRange("initial_rate_bps", f.initial_rate_bps, 0, params.capacity_bps),
          CheckRange("start_us", f.start_us, 0, 1e12),
          CheckRange("initial_alpha", f.initial_alpha, 0, 1)}) {
      if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(prefix, s.message()));
    }
  }
  // Euler over the fastest term (R_T relaxing towards R_C over τ) needs a step well
  // under τ and τ′; 10 µs is the authors' largest solver step.
  const double max_step_us = std::min({10.0, params.tau_us / 5, params.tau_prime_us / 5});
  if (absl::Status s = CheckRange("step_us", step_us, 0, max_step_us, true); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (at most 10 µs and a fifth of tau_us and tau_prime_us)"));
  }
  return DcqcnFluidModel(params, std::move(flows), step_us);
}

DcqcnFluidModel::DcqcnFluidModel(const DcqcnParams& params, std::vector<FlowStart> flows,
                                 double step_us)
    : params_(params), flows_(std::move(flows)), step_us_(step_us), step_s_(step_us * 1e-6) {
  const double packet_bits = params_.packet_bytes * 8;
  units_ = ToModelUnits(params_);

  const int n = num_flows();
  rate_current_pps_.assign(n, 0);
  rate_target_pps_.assign(n, 0);
  alpha_.assign(n, 0);
  started_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    if (!Active(i)) continue;
    started_[i] = true;
    rate_current_pps_[i] = rate_target_pps_[i] = flows_[i].initial_rate_bps / packet_bits;
    alpha_[i] = flows_[i].initial_alpha;
  }
  delay_steps_ = static_cast<int>(std::lround(params_.feedback_delay_us / step_us_));
  history_len_ = delay_steps_ + 1;
  // Before t = τ* the loop sees the initial state (a constant history).
  p_history_.assign(history_len_, MarkingProbability(params_, 0));
  rate_history_pps_.resize(static_cast<size_t>(history_len_) * n);
  for (int slot = 0; slot < history_len_; ++slot) {
    std::copy(rate_current_pps_.begin(), rate_current_pps_.end(),
              rate_history_pps_.begin() + static_cast<size_t>(slot) * n);
  }
}

ReactionPointStepper::ReactionPointStepper(const DcqcnParams& params, double step_s)
    : ReactionPointStepper(ToModelUnits(params), step_s) {}

ReactionPointStepper::ReactionPointStepper(const ModelUnits& units, double step_s)
    : units_(units), step_s_(step_s) {}

void ReactionPointStepper::Step(double p, double rate_delayed_pps, ReactionPoint* flow) {
  if (!has_marking_ || p != marking_.p) {
    marking_ = MarkingTermsAt(units_, p);
    has_marking_ = true;
  }
  const DcqcnFlowState state{flow->alpha, flow->rate_target_pps, flow->rate_current_pps};
  DcqcnFlowState d = FlowDerivatives(units_, marking_, state, rate_delayed_pps);
  // The authors' clamp: no increase at line rate.
  const double capacity_pps = units_.capacity_pps;
  if (state.rate_target_pps >= capacity_pps) d.rate_target_pps = std::min(d.rate_target_pps, 0.0);
  if (state.rate_current_pps >= capacity_pps) {
    d.rate_current_pps = std::min(d.rate_current_pps, 0.0);
  }
  flow->rate_target_pps =
      std::clamp(state.rate_target_pps + d.rate_target_pps * step_s_, 0.0, capacity_pps);
  flow->rate_current_pps =
      std::clamp(state.rate_current_pps + d.rate_current_pps * step_s_, 0.0, capacity_pps);
  flow->alpha = std::clamp(state.alpha + d.alpha * step_s_, 0.0, 1.0);
}

bool DcqcnFluidModel::Active(int flow) const {
  return flows_[flow].start_us <= time_us() + step_us_ * 1e-9;
}

void DcqcnFluidModel::Step() {
  const int n = num_flows();
  const double packet_bits = params_.packet_bytes * 8;
  // The present is in slot k % L (L = τ*/step + 1), so k - τ*/step is in (k + 1) % L.
  const int read_slot = static_cast<int>((step_count_ + 1) % history_len_);
  const double p = p_history_[read_slot];
  const double* delayed_rate = &rate_history_pps_[static_cast<size_t>(read_slot) * n];
  const double capacity_pps = units_.capacity_pps;
  ReactionPointStepper stepper(units_, step_s_);
  double total_rate = 0;
  for (int i = 0; i < n; ++i) {
    if (!Active(i)) continue;
    if (!started_[i]) {  // the flow starts in this step
      started_[i] = true;
      rate_current_pps_[i] = rate_target_pps_[i] = flows_[i].initial_rate_bps / packet_bits;
      alpha_[i] = flows_[i].initial_alpha;
    }
    total_rate += rate_current_pps_[i];
    ReactionPoint flow{rate_current_pps_[i], rate_target_pps_[i], alpha_[i]};
    stepper.Step(p, delayed_rate[i], &flow);
    rate_current_pps_[i] = flow.rate_current_pps;
    rate_target_pps_[i] = flow.rate_target_pps;
    alpha_[i] = flow.alpha;
  }
  double d_queue = total_rate - capacity_pps;
  if (queue_packets_ <= 0) d_queue = std::max(d_queue, 0.0);
  queue_packets_ = std::max(queue_packets_ + d_queue * step_s_, 0.0);

  ++step_count_;
  // The new present overwrites the slot that was τ* old.
  const int slot = static_cast<int>(step_count_ % history_len_);
  p_history_[slot] = MarkingProbability(params_, queue_bytes());
  std::copy(rate_current_pps_.begin(), rate_current_pps_.end(),
            rate_history_pps_.begin() + static_cast<size_t>(slot) * n);
}

TraceSample DcqcnFluidModel::Sample() const {
  const double packet_bits = params_.packet_bytes * 8;
  TraceSample sample;
  sample.time_us = time_us();
  sample.queue_bytes = queue_bytes();
  sample.marking_probability = MarkingProbability(params_, sample.queue_bytes);
  sample.rate_current_bps.reserve(num_flows());
  sample.rate_target_bps.reserve(num_flows());
  for (int i = 0; i < num_flows(); ++i) {
    sample.rate_current_bps.push_back(rate_current_pps_[i] * packet_bits);
    sample.rate_target_bps.push_back(rate_target_pps_[i] * packet_bits);
  }
  sample.alpha = alpha_;
  return sample;
}

absl::StatusOr<Trace> DcqcnFluidModel::Run(const RunOptions& options) {
  if (absl::Status s = CheckRange("duration_us", options.duration_us, 0, 1e12); !s.ok()) return s;
  if (absl::Status s = CheckRange("sample_interval_us", options.sample_interval_us, 0, 1e12, true);
      !s.ok()) {
    return s;
  }
  const int64_t steps = std::llround(options.duration_us / step_us_);
  const int64_t every = std::max<int64_t>(1, std::llround(options.sample_interval_us / step_us_));
  Trace trace;
  trace.samples.reserve(steps / every + 2);
  trace.samples.push_back(Sample());
  for (int64_t k = 1; k <= steps; ++k) {
    Step();
    if (k % every == 0) trace.samples.push_back(Sample());
  }
  return trace;
}

absl::StatusOr<WindowStats> Summarize(const Trace& trace, double capacity_bps, double from_us,
                                      double to_us) {
  WindowStats stats;
  double sum = 0, sum_sq = 0;
  for (const TraceSample& s : trace.samples) {
    if (s.time_us < from_us || s.time_us > to_us) continue;
    if (stats.mean_rate_bps.empty()) stats.mean_rate_bps.assign(s.rate_current_bps.size(), 0);
    ++stats.samples;
    sum += s.queue_bytes;
    sum_sq += s.queue_bytes * s.queue_bytes;
    for (size_t i = 0; i < s.rate_current_bps.size(); ++i) {
      stats.mean_rate_bps[i] += s.rate_current_bps[i];
    }
  }
  if (stats.samples == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no sample in the window [", from_us, ", ", to_us, "] µs"));
  }
  const double k = stats.samples;
  stats.mean_queue_bytes = sum / k;
  stats.std_queue_bytes =
      std::sqrt(std::max(0.0, sum_sq / k - stats.mean_queue_bytes * stats.mean_queue_bytes));
  stats.queue_std_over_mean =
      stats.mean_queue_bytes > 0 ? stats.std_queue_bytes / stats.mean_queue_bytes : 0;
  double rate_sum = 0, rate_sq = 0;
  for (double& r : stats.mean_rate_bps) {
    r /= k;
    rate_sum += r;
    rate_sq += r * r;
  }
  const double n = stats.mean_rate_bps.size();
  stats.jain_fairness = rate_sq > 0 ? rate_sum * rate_sum / (n * rate_sq) : 0;
  stats.utilization = rate_sum / capacity_bps;
  return stats;
}

absl::StatusOr<double> ConvergenceTimeUs(const Trace& trace, double capacity_bps,
                                         double tolerance_fraction) {
  if (trace.samples.empty()) return absl::InvalidArgumentError("the trace has no samples");
  const double fair = capacity_bps / trace.samples.front().rate_current_bps.size();
  auto within = [&](const TraceSample& s) {
    for (double r : s.rate_current_bps) {
      if (std::abs(r - fair) > tolerance_fraction * fair) return false;
    }
    return true;
  };
  if (!within(trace.samples.back())) {
    return absl::NotFoundError(absl::StrCat("the rates are not within ±", tolerance_fraction * 100,
                                            "% of C/N at the end of the trace (",
                                            trace.samples.back().time_us, " µs)"));
  }
  size_t first = trace.samples.size() - 1;
  while (first > 0 && within(trace.samples[first - 1])) --first;
  return trace.samples[first].time_us;
}

}  // namespace weft::sim
