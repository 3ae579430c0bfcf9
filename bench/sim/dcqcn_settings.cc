// DCQCN settings side by side on the fluid model (issue 20): the ConnectX firmware
// defaults, the CoNEXT'16 paper's values and Barre's hand-tuned direction
// (sim/cc_params.h), each on a 4→1 and an 8→1 incast at 100 Gb/s, flows starting at
// line rate and from an unfair start (flow 0 at C, the others at C/100). Reports Jain
// fairness of the mean rates, the queue's mean and std/mean (oscillation) and link
// utilisation over the second half of the run, and the time until every flow stays within
// ±10 % of C/N. Prints Markdown for docs/benchmarks.md.
//
//   bazel run -c opt //bench/sim:dcqcn_settings -- --feedback_delay_us=4
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/cc_params.h"
#include "sim/dcqcn_fluid.h"

ABSL_FLAG(double, link_gbps, 100, "bottleneck link; ECN Kmin/Kmax scale per 25 Gb/s");
ABSL_FLAG(double, feedback_delay_us, 4, "τ*, the control-loop delay");
ABSL_FLAG(double, packet_bytes, 1000, "the model's counting unit");
ABSL_FLAG(double, duration_ms, 500, "simulated time per run; statistics over the second half");
ABSL_FLAG(double, tolerance, 0.10, "convergence band around C/N");

namespace weft::sim {
namespace {

double Jain(const std::vector<double>& x) {
  double sum = 0, sum_sq = 0;
  for (double v : x) sum += v, sum_sq += v * v;
  return sum_sq > 0 ? sum * sum / (x.size() * sum_sq) : 1;
}

// The lowest Jain index of the instantaneous rates R_C over [from_us, to_us]: the
// windowed means can be equal while the flows take turns.
double MinInstantJain(const Trace& trace, double from_us, double to_us) {
  double lowest = 1;
  for (const TraceSample& s : trace.samples) {
    if (s.time_us >= from_us && s.time_us <= to_us) {
      lowest = std::min(lowest, Jain(s.rate_current_bps));
    }
  }
  return lowest;
}

int Main() {
  FabricSide side = HpccFabricSide(absl::GetFlag(FLAGS_link_gbps) * 1e9);
  side.feedback_delay_us = absl::GetFlag(FLAGS_feedback_delay_us);
  side.packet_bytes = absl::GetFlag(FLAGS_packet_bytes);
  const double duration_us = absl::GetFlag(FLAGS_duration_ms) * 1e3;
  const double tolerance = absl::GetFlag(FLAGS_tolerance);
  std::printf(
      "C = %g Gb/s, Kmin %g KB, Kmax %g KB, Pmax %g (mark all above Kmax), τ* = %g µs, "
      "%g-byte packets, %g ms per run, statistics over the second half, convergence to "
      "±%g %% of C/N\n\n",
      side.link_bps / 1e9, side.kmin_bytes / 1e3, side.kmax_bytes / 1e3, side.pmax,
      side.feedback_delay_us, side.packet_bytes, duration_us / 1e3, tolerance * 100);
  for (const CcPreset& preset : CcPresets()) {
    const MappedCcParams m = MapCcParams(preset.cc, side).value();
    const DcqcnParams& p = m.params;
    std::printf(
        "- %s: g = %g, τ = %g µs, τ′ = %g µs (step %g µs), T = %g µs, B = %s, F = %d, R_AI = %g Mb/s; "
        "not modelled: %s\n",
        preset.name.c_str(), p.g, p.tau_us, p.tau_prime_us, ModelStepUs(p), p.timer_us,
        p.byte_counter_bytes >= 1e12
            ? "off"
            : absl::StrFormat("%g bytes", p.byte_counter_bytes).c_str(),
        p.fast_recovery_steps, p.rate_ai_bps / 1e6,
        m.not_modelled.empty() ? "nothing" : absl::StrJoin(m.not_modelled, "; ").c_str());
  }
  std::printf(
      "\n| incast | start | settings | Jain (means) | lowest instant Jain | mean queue (KB) | queue std/mean | utilisation "
      "| convergence (ms) |\n|---|---|---|---|---|---|---|---|---|\n");
  for (int n : {4, 8}) {
    for (bool unfair : {false, true}) {
      for (const CcPreset& preset : CcPresets()) {
        const MappedCcParams m = MapCcParams(preset.cc, side).value();
        std::vector<FlowStart> flows =
            UniformFlows(n, unfair ? m.params.capacity_bps / 100 : m.params.capacity_bps);
        if (unfair) flows[0].initial_rate_bps = m.params.capacity_bps;
        for (FlowStart& f : flows) f.initial_alpha = m.initial_alpha;
        DcqcnFluidModel model = DcqcnFluidModel::Create(m.params, flows, ModelStepUs(m.params)).value();
        RunOptions options;
        options.duration_us = duration_us;
        options.sample_interval_us = 10;
        const Trace trace = model.Run(options).value();
        const WindowStats s =
            Summarize(trace, m.params.capacity_bps, duration_us / 2, duration_us).value();
        const absl::StatusOr<double> converged =
            ConvergenceTimeUs(trace, m.params.capacity_bps, tolerance);
        std::printf("| %d→1 | %s | %s | %.4f | %.4f | %.1f | %.3f | %.3f | %s |\n", n,
                    unfair ? "unfair" : "line rate", preset.name.c_str(), s.jain_fairness,
                    MinInstantJain(trace, duration_us / 2, duration_us),
                    s.mean_queue_bytes / 1e3, s.queue_std_over_mean, s.utilization,
                    converged.ok() ? absl::StrFormat("%.2f", *converged / 1e3).c_str() : "never");
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::sim

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::sim::Main();
}
