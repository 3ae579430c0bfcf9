#include "sim/dcqcn_episode.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace weft::sim {
namespace {

absl::Status OutOfRange(const std::string& name, double value, const char* accepted) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, " = ", value, " is out of range: accepted ", accepted));
}

absl::Status Validate(const EpisodeConfig& c) {
  if (absl::Status s = ValidateParams(c.dcqcn); !s.ok()) return s;
  if (c.flows.empty()) return absl::InvalidArgumentError("flows is empty: accepted at least 1 flow");
  for (size_t i = 0; i < c.flows.size(); ++i) {
    const EpisodeFlow& f = c.flows[i];
    const std::string prefix = absl::StrCat("flows[", i, "].");
    if (!(f.bytes > 0 && f.bytes < 1e15)) return OutOfRange(prefix + "bytes", f.bytes, "(0, 1e15)");
    if (!(f.start_us >= 0 && f.start_us < c.max_duration_us)) {
      return OutOfRange(prefix + "start_us", f.start_us, "[0, max_duration_us)");
    }
    if (!(f.feedback_delay_us >= 0 && f.feedback_delay_us <= 1e4)) {
      return OutOfRange(prefix + "feedback_delay_us", f.feedback_delay_us, "[0, 10000] µs");
    }
    if (!(f.max_rate_bps >= 0 && f.max_rate_bps <= c.dcqcn.capacity_bps)) {
      return OutOfRange(prefix + "max_rate_bps", f.max_rate_bps, "[0, capacity_bps]");
    }
    if (f.victim && f.max_rate_bps <= 0) {
      return OutOfRange(prefix + "max_rate_bps", f.max_rate_bps,
                        "(0, capacity_bps] for a victim flow (it sends at its cap)");
    }
    if (!(f.initial_alpha >= 0 && f.initial_alpha <= 1)) {
      return OutOfRange(prefix + "initial_alpha", f.initial_alpha, "[0, 1]");
    }
  }
  if (!(c.pfc_xoff_bytes >= 0)) return OutOfRange("pfc_xoff_bytes", c.pfc_xoff_bytes, "[0, inf)");
  if (!(c.pfc_xon_bytes >= 0 && c.pfc_xon_bytes <= c.pfc_xoff_bytes)) {
    return OutOfRange("pfc_xon_bytes", c.pfc_xon_bytes, "[0, pfc_xoff_bytes]");
  }
  if (!(c.pfc_delay_us >= 0 && c.pfc_delay_us <= 1e3)) {
    return OutOfRange("pfc_delay_us", c.pfc_delay_us, "[0, 1000] µs");
  }
  const OtherClassLoad& o = c.other_class;
  if (!(o.share >= 0 && o.share < 1)) return OutOfRange("other_class.share", o.share, "[0, 1)");
  if (!(o.on_fraction >= 0 && o.on_fraction <= 1)) {
    return OutOfRange("other_class.on_fraction", o.on_fraction, "[0, 1]");
  }
  if (!(o.period_us > 0)) return OutOfRange("other_class.period_us", o.period_us, "(0, inf)");
  const double max_step_us = std::min({1.0, c.dcqcn.tau_us / 5, c.dcqcn.tau_prime_us / 5});
  if (!(c.step_us > 0 && c.step_us <= max_step_us)) {
    return OutOfRange("step_us", c.step_us, "(0, min(1, tau_us/5, tau_prime_us/5)] µs");
  }
  if (!(c.max_duration_us > 0 && c.max_duration_us <= 1e7)) {
    return OutOfRange("max_duration_us", c.max_duration_us, "(0, 1e7] µs");
  }
  return absl::OkStatus();
}

bool OtherClassOn(const OtherClassLoad& o, double t_us) {
  if (o.share <= 0 || o.on_fraction <= 0) return false;
  const double in_period = std::fmod(t_us - o.phase_us + 1e6 * o.period_us, o.period_us);
  return in_period < o.on_fraction * o.period_us;
}

}  // namespace

absl::StatusOr<EpisodeResult> RunEpisode(const EpisodeConfig& config) {
  if (absl::Status s = Validate(config); !s.ok()) return s;
  const DcqcnParams& params = config.dcqcn;
  const ModelUnits units = ToModelUnits(params);
  const int n = static_cast<int>(config.flows.size());
  const double dt_us = config.step_us, dt_s = dt_us * 1e-6;
  const double packet_bytes = params.packet_bytes;

  std::vector<int> delay_steps(n);
  std::vector<double> cap_pps(n);
  int max_delay = 0;
  for (int i = 0; i < n; ++i) {
    delay_steps[i] = static_cast<int>(std::lround(config.flows[i].feedback_delay_us / dt_us));
    max_delay = std::max(max_delay, delay_steps[i]);
    const double cap_bps = config.flows[i].max_rate_bps > 0 ? config.flows[i].max_rate_bps
                                                            : params.capacity_bps;
    cap_pps[i] = cap_bps / (packet_bytes * 8);
  }
  const int pause_delay = static_cast<int>(std::lround(config.pfc_delay_us / dt_us));
  // Slot k % len holds what step k produced; a reader d steps late at step k reads step
  // k − d − 1 (the last completed step when d = 0).
  const int len = max_delay + 2, pause_len = pause_delay + 2;
  std::vector<double> p_history(len, 0);
  std::vector<double> rate_history(static_cast<size_t>(len) * n, 0);
  std::vector<char> pause_history(pause_len, 0);

  std::vector<ReactionPoint> rp(n);
  std::vector<bool> started(n, false), sending(n, false), done(n, false);
  std::vector<double> to_send(n), queued(n, 0), delivered(n, 0), fct(n, 0);
  for (int i = 0; i < n; ++i) to_send[i] = config.flows[i].bytes;
  ReactionPointStepper stepper(units, dt_s);

  double first_start_us = config.max_duration_us;
  for (const EpisodeFlow& f : config.flows) first_start_us = std::min(first_start_us, f.start_us);
  const int64_t max_steps = static_cast<int64_t>(config.max_duration_us / dt_us);
  const int64_t sample_every = std::max<int64_t>(1, std::llround(1.0 / dt_us));
  double queue_integral = 0, capacity_bytes = 0, total_delivered = 0;
  int64_t active_steps = 0, paused_steps = 0;
  std::vector<double> queue_samples;
  bool pause_state = false;
  int remaining = n;
  EpisodeResult result;
  std::vector<double> sent_pps(n, 0);
  double last_start_us = 0;
  for (const EpisodeFlow& f : config.flows) last_start_us = std::max(last_start_us, f.start_us);
  // Delivered bytes when the last flow starts and when the first one completes.
  std::vector<double> delivered_at_last_start, delivered_at_first_done;
  double window_start_us = 0, window_end_us = 0;

  int64_t k = 0;
  for (; k < max_steps && remaining > 0; ++k) {
    const double t_us = k * dt_us;
    if (delivered_at_last_start.empty() && t_us + 1e-9 >= last_start_us) {
      delivered_at_last_start = delivered;
      window_start_us = t_us;
    }
    const int64_t read_pause = k - pause_delay - 1;
    const bool paused = read_pause >= 0 && pause_history[read_pause % pause_len];
    bool any_waiting = false;
    for (int i = 0; i < n; ++i) {
      sent_pps[i] = 0;
      if (!started[i] && config.flows[i].start_us <= t_us + 1e-9) {
        started[i] = sending[i] = true;
        rp[i].rate_current_pps = rp[i].rate_target_pps = cap_pps[i];
        rp[i].alpha = config.flows[i].initial_alpha;
        // Before it started, the flow's loop sees it at its initial rate.
        for (int slot = 0; slot < len; ++slot) rate_history[slot * n + i] = cap_pps[i];
      }
      if (!sending[i]) continue;
      any_waiting = true;
      if (paused) continue;
      if (config.flows[i].victim) {  // straight to its receiver on another path
        const double bytes = std::min(cap_pps[i] * packet_bytes * dt_s, to_send[i]);
        to_send[i] -= bytes;
        delivered[i] += bytes;
        if (to_send[i] <= 0) {
          sending[i] = false;
          done[i] = true;
          fct[i] = t_us + dt_us - config.flows[i].start_us;
          --remaining;
        }
        continue;
      }
      const double bytes = std::min(rp[i].rate_current_pps * packet_bytes * dt_s, to_send[i]);
      to_send[i] -= bytes;
      queued[i] += bytes;
      sent_pps[i] = bytes / (packet_bytes * dt_s);
      if (to_send[i] <= 0) sending[i] = false;
    }
    for (int i = 0; i < n; ++i) {
      if (!sending[i] || config.flows[i].victim) continue;
      const int64_t read = k - delay_steps[i] - 1;
      const double p = read >= 0 ? p_history[read % len] : 0;
      const double rate = read >= 0 ? rate_history[(read % len) * n + i] : cap_pps[i];
      stepper.Step(p, rate, &rp[i]);
      rp[i].rate_current_pps = std::min(rp[i].rate_current_pps, cap_pps[i]);
      rp[i].rate_target_pps = std::min(rp[i].rate_target_pps, cap_pps[i]);
    }
    const double available_bps =
        params.capacity_bps * (OtherClassOn(config.other_class, t_us) ? 1 - config.other_class.share : 1);
    const double budget = available_bps / 8 * dt_s;
    double total = 0;
    for (int i = 0; i < n; ++i) total += queued[i];
    const double served_share = total <= budget ? 1 : budget / total;
    double queue_after = 0;
    for (int i = 0; i < n; ++i) {
      const double served = queued[i] * served_share;
      queued[i] -= served;
      delivered[i] += served;
      total_delivered += served;
      queue_after += queued[i];
      if (!done[i] && started[i] && !sending[i] && !config.flows[i].victim && queued[i] <= 1e-9 * config.flows[i].bytes) {
        done[i] = true;
        fct[i] = t_us + dt_us - config.flows[i].start_us;
        --remaining;
      }
    }
    if (delivered_at_first_done.empty() && remaining < n) {
      delivered_at_first_done = delivered;
      window_end_us = t_us + dt_us;
    }
    if (config.pfc_xoff_bytes > 0) {
      pause_state = pause_state ? queue_after > config.pfc_xon_bytes
                                : queue_after >= config.pfc_xoff_bytes;
    }
    const int slot = static_cast<int>(k % len);
    p_history[slot] = MarkingProbability(params, queue_after);
    for (int i = 0; i < n; ++i) rate_history[slot * n + i] = sent_pps[i];
    pause_history[k % pause_len] = pause_state;
    if (t_us >= first_start_us) {
      ++active_steps;
      queue_integral += queue_after;
      capacity_bytes += budget;
      if (paused && any_waiting) ++paused_steps;
      if (k % sample_every == 0) queue_samples.push_back(queue_after);
      result.max_queue_bytes = std::max(result.max_queue_bytes, queue_after);
    }
  }

  result.fct_us.resize(n);
  double last_done_us = first_start_us, rate_sum = 0, rate_sq = 0;
  for (int i = 0; i < n; ++i) {
    if (!done[i]) {
      ++result.unfinished;
      fct[i] = config.max_duration_us - config.flows[i].start_us;
    }
    result.fct_us[i] = fct[i];
    last_done_us = std::max(last_done_us, config.flows[i].start_us + fct[i]);
    const double rate = config.flows[i].bytes / std::max(fct[i], dt_us);
    rate_sum += rate;
    rate_sq += rate * rate;
  }
  result.makespan_us = last_done_us - first_start_us;
  if (active_steps > 0) {
    result.mean_queue_bytes = queue_integral / active_steps;
    result.pause_share = static_cast<double>(paused_steps) / active_steps;
  }
  result.utilization = capacity_bytes > 0 ? total_delivered / capacity_bytes : 0;
  if (!queue_samples.empty()) {
    const size_t index = std::min(queue_samples.size() - 1,
                                  static_cast<size_t>(0.99 * queue_samples.size()));
    std::nth_element(queue_samples.begin(), queue_samples.begin() + index, queue_samples.end());
    result.p99_queue_bytes = queue_samples[index];
  }
  if (!delivered_at_last_start.empty() && !delivered_at_first_done.empty() &&
      window_end_us > window_start_us + dt_us) {
    rate_sum = rate_sq = 0;
    for (int i = 0; i < n; ++i) {
      const double rate = delivered_at_first_done[i] - delivered_at_last_start[i];
      rate_sum += rate;
      rate_sq += rate * rate;
    }
  }
  result.jain_fairness = rate_sq > 0 ? rate_sum * rate_sum / (n * rate_sq) : 0;
  return result;
}

}  // namespace weft::sim
