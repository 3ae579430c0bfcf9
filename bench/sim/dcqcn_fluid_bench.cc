// The DCQCN fluid model against the CoNEXT'16 published points (Fig. 4 time domain,
// the closed-form fixed point, the convergence bound data), and what it costs:
// simulated flow-microseconds per wall second. Prints Markdown for docs/benchmarks.md.
// --phase_margin prints the linearized loop's phase margin against N (Fig. 3) instead:
// the exact linearization, the paper's (LinearizeAsPublished), and the steps between them.
//
//   bazel run -c opt //bench/sim:dcqcn_fluid_bench -- --packet_bytes=1000
//   bazel run -c opt //bench/sim:dcqcn_fluid_bench -- --phase_margin
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "sim/dcqcn_fluid.h"
#include "sim/dcqcn_stability.h"

ABSL_FLAG(double, packet_bytes, 1000, "the unit the model counts in (0.125 = bits)");
ABSL_FLAG(double, pmax, 0.01, "marking probability at Kmax");
ABSL_FLAG(double, kmax_bytes, 200e3, "Kmax");
ABSL_FLAG(bool, extend_ramp, true,
          "continue the marking ramp above Kmax (false: mark every packet there)");
ABSL_FLAG(double, duration_ms, 200, "simulated time per run");
ABSL_FLAG(bool, convergence, true, "also run the unfair-start convergence points");
ABSL_FLAG(bool, phase_margin, false,
          "print the phase margin against N (Fig. 3a at τ* = 0, 50, 85, 100 µs; Fig. 3c: R_AI = "
          "10 Mb/s, Kmax = 1000 KB at 0 and 100 µs) and skip the time-domain runs");

namespace weft::sim {
namespace {

struct Measured {
  WindowStats stats;
  double wall_s = 0;
  double flow_us = 0;
};

Measured RunOne(const DcqcnParams& params, std::vector<FlowStart> flows, double duration_us) {
  const int n = static_cast<int>(flows.size());
  DcqcnFluidModel model = DcqcnFluidModel::Create(params, std::move(flows)).value();
  RunOptions options;
  options.duration_us = duration_us;
  options.sample_interval_us = 10;
  const auto start = std::chrono::steady_clock::now();
  Trace trace = model.Run(options).value();
  Measured m;
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.flow_us = duration_us * n;
  m.stats = Summarize(trace, params.capacity_bps, duration_us / 2, duration_us).value();
  return m;
}

using Linearizer = absl::StatusOr<LinearizedFlow> (*)(const DcqcnParams&, int);

absl::StatusOr<LinearizedFlow> Exact(const DcqcnParams& params, int n) {
  return Linearize(params, n);
}

absl::StatusOr<LinearizedFlow> Published(const DcqcnParams& params, int n) {
  return LinearizeAsPublished(params, n);
}

// One column of Fig. 3: "margin (crossover)" for each N under `params`.
std::vector<std::string> MarginColumn(Linearizer linearize, const DcqcnParams& params,
                                      const std::vector<int>& flows) {
  std::vector<std::string> cells;
  for (int n : flows) {
    absl::StatusOr<LinearizedFlow> flow = linearize(params, n);
    absl::StatusOr<LoopMargin> margin =
        flow.ok() ? PhaseMargin(*flow) : absl::StatusOr<LoopMargin>(flow.status());
    cells.push_back(margin.ok() ? absl::StrFormat("%.2f (%.0f)", margin->phase_margin_deg,
                                                  margin->crossover_rad_per_s)
                                : std::string(margin.status().message()));
  }
  return cells;
}

struct Column {
  std::string title;
  DcqcnParams params;
};

// Fig. 3a at the given delays, then Fig. 3c's tuning (R_AI = 10 Mb/s, Kmax = 1000 KB).
std::vector<Column> Fig3Columns(const DcqcnParams& base, const std::vector<double>& delays_us,
                                const std::vector<double>& tuned_delays_us) {
  std::vector<Column> columns;
  for (double delay_us : delays_us) {
    columns.push_back({absl::StrFormat("τ* = %g µs", delay_us), base});
    columns.back().params.feedback_delay_us = delay_us;
  }
  for (double delay_us : tuned_delays_us) {
    columns.push_back({absl::StrFormat("R_AI 10 Mb/s, Kmax 1000 KB, τ* = %g µs", delay_us), base});
    columns.back().params.feedback_delay_us = delay_us;
    columns.back().params.rate_ai_bps = 10e6;
    columns.back().params.kmax_bytes = 1000e3;
  }
  return columns;
}

void PrintMarginTable(const char* title, Linearizer linearize, const std::vector<Column>& columns,
                      const std::vector<int>& flows) {
  std::printf("%s\n\n| N |", title);
  std::vector<std::vector<std::string>> cells;
  for (const Column& column : columns) {
    std::printf(" %s |", column.title.c_str());
    cells.push_back(MarginColumn(linearize, column.params, flows));
  }
  std::printf("\n|---|");
  for (size_t c = 0; c < columns.size(); ++c) std::printf("---|");
  for (size_t i = 0; i < flows.size(); ++i) {
    std::printf("\n| %d |", flows[i]);
    for (const std::vector<std::string>& column : cells) std::printf(" %s |", column[i].c_str());
  }
  std::printf("\n\n");
}

std::string MarginCell(const absl::StatusOr<LinearizedFlow>& flow) {
  if (!flow.ok()) return std::string(flow.status().message());
  absl::StatusOr<LoopMargin> margin = PhaseMargin(*flow);
  return margin.ok() ? absl::StrFormat("%.2f", margin->phase_margin_deg)
                     : std::string(margin.status().message());
}

// From the exact linearization to the published one, one difference at a time.
void PrintSteps(const DcqcnParams& base, const std::vector<int>& flows) {
  std::printf(
      "From the exact linearization to the published one at τ* = %g µs, one step at a time "
      "(margin in degrees)\n\n| N | exact | + cube-root p* | + the paper's first-order "
      "linearization | + opened at the delay (= published) | paper's at the exact p* |\n"
      "|---|---|---|---|---|---|\n",
      base.feedback_delay_us);
  for (int n : flows) {
    absl::StatusOr<LinearizedFlow> published = LinearizeAsPublished(base, n);
    absl::StatusOr<LinearizedFlow> at_marking = published;
    if (at_marking.ok()) at_marking->opening = LoopOpening::kAtMarking;
    std::printf("| %d | %s | %s | %s | %s | %s |\n", n, MarginCell(Linearize(base, n)).c_str(),
                MarginCell(Linearize(base, n, FixedPointMarking::kCubeRoot)).c_str(),
                MarginCell(at_marking).c_str(), MarginCell(published).c_str(),
                MarginCell(LinearizeAsPublished(base, n, FixedPointMarking::kExact)).c_str());
  }
  std::printf("\n");
}

// The paper's first-order linearization, opened at the marking, with its departures from
// Fig. 1 undone one at a time (entries as LinearizeAsPublished documents them); what is
// left when all three are undone is the expansion (1 - p)^n ≈ 1 - n·p alone.
struct Departures {
  bool alpha_per_packet = true;
  bool rates_exchanged = true;
  bool increase_on_present_rate = true;
};
absl::StatusOr<LinearizedFlow> PublishedWith(const DcqcnParams& params, int n,
                                             const Departures& keep) {
  absl::StatusOr<LinearizedFlow> flow = LinearizeAsPublished(params, n);
  absl::StatusOr<LinearizedFlow> exact = Linearize(params, n, FixedPointMarking::kCubeRoot);
  if (!flow.ok()) return flow;
  if (!exact.ok()) return exact;
  flow->opening = LoopOpening::kAtMarking;
  if (!keep.alpha_per_packet) {  // α's row as Fig. 1 has it: per τ′
    flow->jacobian[0][0] = exact->jacobian[0][0];
    flow->marking_input[0] = exact->marking_input[0];
    flow->delayed_rate_input[0] = exact->delayed_rate_input[0];
  }
  if (!keep.rates_exchanged) std::swap(flow->jacobian[2][2], flow->delayed_rate_input[2]);
  if (!keep.increase_on_present_rate) {
    const ModelUnits units = ToModelUnits(params);
    const double a =
        1 / units.byte_counter_packets + 1 / (units.timer_s * flow->fixed_point.rate_current_pps);
    flow->jacobian[1][2] -= a * units.rate_ai_pps;
  }
  return flow;
}

void PrintDepartures(const DcqcnParams& base, const std::vector<int>& flows) {
  std::printf(
      "The paper's first-order linearization at τ* = %g µs, opened at the marking, its other "
      "departures from Fig. 1 undone (margin in degrees)\n\n| N | as published | α per τ′ | "
      "R_C and R^ in place | R_AI·A on R^ only | all three: first order in p alone | exact "
      "(cube-root p*) |\n|---|---|---|---|---|---|---|\n",
      base.feedback_delay_us);
  for (int n : flows) {
    std::printf("| %d | %s | %s | %s | %s | %s | %s |\n", n,
                MarginCell(PublishedWith(base, n, {})).c_str(),
                MarginCell(PublishedWith(base, n, {.alpha_per_packet = false})).c_str(),
                MarginCell(PublishedWith(base, n, {.rates_exchanged = false})).c_str(),
                MarginCell(PublishedWith(base, n, {.increase_on_present_rate = false})).c_str(),
                MarginCell(PublishedWith(base, n, {false, false, false})).c_str(),
                MarginCell(Linearize(base, n, FixedPointMarking::kCubeRoot)).c_str());
  }
  std::printf("\n");
}

int PrintPhaseMargins(const DcqcnParams& base) {
  const std::vector<int> flows = {2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 30, 34, 40, 50, 64, 80, 100};
  std::printf("packet_bytes %g, above Kmax: %s\n\n", base.packet_bytes,
              base.above_kmax == AboveKmax::kExtendRamp ? "ramp continued" : "mark all");
  PrintMarginTable(
      "Exact linearization (Linearize): phase margin in degrees (gain crossover in rad/s)", Exact,
      Fig3Columns(base, {0, 50, 85, 100}, {0, 100}), flows);
  PrintMarginTable(
      "The paper's linearization (LinearizeAsPublished): phase margin in degrees (gain crossover "
      "in rad/s)",
      Published, Fig3Columns(base, {0, 1, 50, 85, 100}, {0, 50, 100}), flows);
  for (double delay_us : {0.0, 50.0, 100.0}) {
    DcqcnParams params = base;
    params.feedback_delay_us = delay_us;
    PrintSteps(params, {2, 4, 10, 20, 30, 64, 100});
  }
  for (double delay_us : {50.0, 100.0}) {
    DcqcnParams params = base;
    params.feedback_delay_us = delay_us;
    PrintDepartures(params, {2, 4, 10, 20, 30, 64, 100});
  }
  return 0;
}

int Main() {
  DcqcnParams base;
  base.packet_bytes = absl::GetFlag(FLAGS_packet_bytes);
  base.pmax = absl::GetFlag(FLAGS_pmax);
  base.kmax_bytes = absl::GetFlag(FLAGS_kmax_bytes);
  base.above_kmax = absl::GetFlag(FLAGS_extend_ramp) ? AboveKmax::kExtendRamp : AboveKmax::kMarkAll;
  if (absl::GetFlag(FLAGS_phase_margin)) return PrintPhaseMargins(base);
  const double duration_us = absl::GetFlag(FLAGS_duration_ms) * 1e3;
  std::printf(
      "packet_bytes %g, pmax %g, kmax_bytes %g, above Kmax: %s, %g ms per run, "
      "window: second half\n\n",
      base.packet_bytes, base.pmax, base.kmax_bytes,
      absl::GetFlag(FLAGS_extend_ramp) ? "ramp continued" : "mark all", duration_us / 1e3);
  std::printf(
      "| N | τ* (µs) | p* | q* (KB) | q* cube-root (KB) | mean queue (KB) | queue std/mean | Jain "
      "| "
      "utilization | flow-µs per wall s |\n|---|---|---|---|---|---|---|---|---|---|\n");
  double total_flow_us = 0, total_wall_s = 0;
  for (double delay_us : {4.0, 85.0}) {
    for (int n : {2, 10, 64}) {
      DcqcnParams params = base;
      params.feedback_delay_us = delay_us;
      const FixedPoint fp = ClosedFormFixedPoint(params, n).value();
      const Measured m = RunOne(params, UniformFlows(n, params.capacity_bps), duration_us);
      total_flow_us += m.flow_us;
      total_wall_s += m.wall_s;
      std::printf("| %d | %g | %.4g%s | %.1f | %.1f | %.1f | %.3f | %.4f | %.3f | %.3g |\n", n,
                  delay_us, fp.marking_probability, fp.beyond_ramp ? " (> Pmax)" : "",
                  fp.queue_bytes / 1e3, fp.approx_queue_bytes / 1e3, m.stats.mean_queue_bytes / 1e3,
                  m.stats.queue_std_over_mean, m.stats.jain_fairness, m.stats.utilization,
                  m.flow_us / m.wall_s);
    }
  }
  std::printf("\nall runs: %.3g simulated flow-µs per wall second (1 µs steps)\n",
              total_flow_us / total_wall_s);
  if (!absl::GetFlag(FLAGS_convergence)) return 0;
  // The authors' convergence experiment: one flow at line rate, the others low.
  std::printf(
      "\nUnfair start (flow 0 at C, the others at C/100), τ* = 4 µs, 1 s:\n\n"
      "| N | ±10 %% of C/N (ms) | ±5 %% (ms) | ±20 %% (ms) |\n|---|---|---|---|\n");
  for (int n : {2, 10}) {
    DcqcnParams params = base;
    std::vector<FlowStart> flows = UniformFlows(n, params.capacity_bps / 100);
    flows[0].initial_rate_bps = params.capacity_bps;
    DcqcnFluidModel model = DcqcnFluidModel::Create(params, flows).value();
    RunOptions options;
    options.duration_us = 1e6;
    options.sample_interval_us = 10;
    Trace trace = model.Run(options).value();
    std::string cells;
    for (double tolerance : {0.10, 0.05, 0.20}) {
      absl::StatusOr<double> t = ConvergenceTimeUs(trace, params.capacity_bps, tolerance);
      cells += t.ok() ? absl::StrFormat(" %.1f |", *t / 1e3) : std::string(" never |");
    }
    std::printf("| %d |%s\n", n, cells.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace weft::sim

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::sim::Main();
}
