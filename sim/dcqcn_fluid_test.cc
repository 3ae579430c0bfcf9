// The DCQCN fluid model against the CoNEXT'16 published results (fabric-facts §1, §2).
//
// Units and parameters (fabric-facts §2, "Units matter"). The model counts 1 KB
// (8000-bit) packets: the unit of the authors' stability script (fluidmodel/dcqcn/
// stability.m divides C, B, R_AI, Kmin and Kmax by 8e3 bits), with KB and MB decimal as
// in their scripts. Parameters are the paper's: C = 40 Gb/s, Kmin = 5 KB, Kmax = 200 KB,
// Pmax = 1 %, g = 1/256, τ = 50 µs, τ′ = 55 µs, T = 55 µs, B = 10 MB, F = 5,
// R_AI = 40 Mb/s; flows start at line rate with α = 1 and q = 0.
//
// What was tried (bench/sim/dcqcn_fluid_bench, 200 ms, statistics over the second half):
//   - p* scales linearly with the packet size (R_AI/C², 1/B and N/(T·C) all scale with
//     it), so for N = 64 p* ≤ Pmax needs packets under ~100 bytes. With 1 KB, 1.5 KB
//     and 4 KB packets and a switch that marks every packet above Kmax, N = 64 at
//     τ* = 4 µs rides at Kmax (queue std/mean 0.34-0.44) and N = 64 at 85 µs oscillates
//     (1.27); with 64 or 100 byte packets N = 64 settles at 4 µs but N = 2 oscillates at
//     85 µs (1.5-1.7); with bits (the dcqcn2.m version) every case hovers under Kmin
//     and oscillates (1.0-2.8).
//   - With 1 KB packets and the ramp continued above Kmax (AboveKmax::kExtendRamp,
//     p = (q − Kmin)/(Kmax − Kmin)·Pmax, the marking the authors' stability analysis
//     linearizes: their q* formula has no cap) all six Fig. 4 points hold. The price:
//     N = 64 settles at q ≈ 1.16 MB, a queue a 200 KB-Kmax switch would mark in full.
//     So "N = 64 stable" is a property of the analysed model, not of a RED switch with
//     these thresholds; Fig4MarkAll documents the difference.
// Measured std/mean of the queue (1 KB, ramp continued): τ* = 4 µs: 0.000 for N = 2,
// 10, 64; τ* = 85 µs: 0.036 (N = 2), 0.76 (N = 10), 0.000 (N = 64). The tests call a
// run stable below 0.1 and oscillating above 0.4.
#include "sim/dcqcn_fluid.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr double kStableStdOverMean = 0.1;
constexpr double kOscillatingStdOverMean = 0.4;

DcqcnParams Conext16(double feedback_delay_us) { return Conext16AnalysisParams(feedback_delay_us); }

struct SimRun {
  Trace trace;
  WindowStats stats;  // over the second half
};

SimRun RunFromLineRate(const DcqcnParams& params, int num_flows, double duration_us) {
  absl::StatusOr<DcqcnFluidModel> model =
      DcqcnFluidModel::Create(params, UniformFlows(num_flows, params.capacity_bps));
  EXPECT_TRUE(model.ok()) << model.status();
  RunOptions options;
  options.duration_us = duration_us;
  options.sample_interval_us = 10;
  SimRun run;
  run.trace = model->Run(options).value();
  run.stats = Summarize(run.trace, params.capacity_bps, duration_us / 2, duration_us).value();
  return run;
}

TEST(ClosedFormFixedPointTest, MatchesThePaperFormulaAndGrowsWithFlows) {
  const DcqcnParams params = Conext16(4);
  // The cube-root formula by hand, in 1 KB packets: C = 5e6 pkt/s, R_AI = 5000 pkt/s,
  // B = 1e4 packets: p* = (R_AI·N²/(τ′·C²)·(1/B + N/(T·C))²)^(1/3).
  const FixedPoint two = ClosedFormFixedPoint(params, 2).value();
  EXPECT_NEAR(two.approx_marking_probability, 9.247e-4, 1e-6);
  EXPECT_NEAR(two.approx_queue_bytes, 23.03e3, 0.05e3);
  EXPECT_DOUBLE_EQ(two.rate_bps, 20e9);
  // The exact root lies below the approximation (its O(p⁴) terms are negative).
  EXPECT_NEAR(two.marking_probability, 7.77e-4, 0.01e-4);
  EXPECT_FALSE(two.beyond_ramp);
  const FixedPoint ten = ClosedFormFixedPoint(params, 10).value();
  const FixedPoint sixty_four = ClosedFormFixedPoint(params, 64).value();
  EXPECT_LT(two.queue_bytes, ten.queue_bytes);
  EXPECT_LT(ten.queue_bytes, sixty_four.queue_bytes);
  EXPECT_FALSE(ten.beyond_ramp);
  // N = 64 needs p* ≈ 0.059 > Pmax = 1 %: a queue far above Kmax.
  EXPECT_TRUE(sixty_four.beyond_ramp);
  EXPECT_GT(sixty_four.queue_bytes, 1e6);
  // α* = 1 − (1 − p*)^(τ′·C/N).
  EXPECT_NEAR(ten.alpha, 1 - std::pow(1 - ten.marking_probability, 55e-6 * 5e6 / 10), 1e-12);
}

TEST(ClosedFormFixedPointTest, ScalesWithThePacketSize) {
  DcqcnParams params = Conext16(4);
  const double p_1k = ClosedFormFixedPoint(params, 10).value().approx_marking_probability;
  params.packet_bytes = 4000;
  EXPECT_NEAR(ClosedFormFixedPoint(params, 10).value().approx_marking_probability, 4 * p_1k, 1e-9);
}

TEST(DcqcnFluidTest, SettlesAtTheFixedPointWithShortDelay) {
  for (int n : {2, 10}) {
    SCOPED_TRACE(testing::Message() << n << " flows");
    const DcqcnParams params = Conext16(4);
    const FixedPoint fp = ClosedFormFixedPoint(params, n).value();
    const SimRun run = RunFromLineRate(params, n, 200e3);
    const TraceSample& last = run.trace.samples.back();
    for (double rate : last.rate_current_bps) EXPECT_NEAR(rate, fp.rate_bps, 0.01 * fp.rate_bps);
    EXPECT_NEAR(run.stats.mean_queue_bytes, fp.queue_bytes, 0.02 * fp.queue_bytes);
    EXPECT_NEAR(last.alpha[0], fp.alpha, 0.05 * fp.alpha);
    EXPECT_LT(run.stats.queue_std_over_mean, kStableStdOverMean);
    EXPECT_GT(run.stats.jain_fairness, 0.9999);
    EXPECT_NEAR(run.stats.utilization, 1, 0.001);
  }
}

// Fig. 4: at τ* = 4 µs 2, 10 and 64 flows are stable; at τ* = 85 µs 10 flows oscillate
// while 2 and 64 stay stable.
TEST(DcqcnFluidTest, Fig4StabilityAgainstDelayAndFlows) {
  struct Point {
    double delay_us;
    int flows;
    bool stable;
  };
  for (const Point& point : {Point{4, 2, true}, Point{4, 10, true}, Point{4, 64, true},
                             Point{85, 2, true}, Point{85, 10, false}, Point{85, 64, true}}) {
    SCOPED_TRACE(testing::Message() << point.flows << " flows, τ* = " << point.delay_us << " µs");
    const SimRun run = RunFromLineRate(Conext16(point.delay_us), point.flows, 200e3);
    if (point.stable) {
      EXPECT_LT(run.stats.queue_std_over_mean, kStableStdOverMean);
    } else {
      EXPECT_GT(run.stats.queue_std_over_mean, kOscillatingStdOverMean);
    }
  }
}

// The simulated queue grows with N as the fixed point does (the paper's argument for a
// PI controller).
TEST(DcqcnFluidTest, QueueGrowsWithFlows) {
  double previous = 0;
  for (int n : {2, 10, 64}) {
    const SimRun run = RunFromLineRate(Conext16(4), n, 100e3);
    EXPECT_GT(run.stats.mean_queue_bytes, 1.5 * previous) << n << " flows";
    previous = run.stats.mean_queue_bytes;
  }
}

// The switch's real marking (every packet above Kmax): with 1 KB packets N = 64 has no
// fixed point on the ramp and its queue keeps swinging about Kmax; this is why the
// published "64 flows stable" needs kExtendRamp.
TEST(DcqcnFluidTest, Fig4SixtyFourFlowsDoNotSettleWhenTheSwitchMarksAllAboveKmax) {
  DcqcnParams params = Conext16(4);
  params.above_kmax = AboveKmax::kMarkAll;
  const SimRun run = RunFromLineRate(params, 64, 100e3);
  EXPECT_GT(run.stats.queue_std_over_mean, 0.2);
  EXPECT_LT(run.stats.mean_queue_bytes, 1.2 * params.kmax_bytes);
}

// Convergence from an unfair start (flow 0 at C, the others at C/100, every α at
// initial_alpha) against the authors' upper bound; "converged" = every rate within 10 %
// of C/N to the end of a run of 2.5× the bound. Returns the time in ms.
double ConvergenceMs(const DcqcnParams& params, int num_flows, double bound_ms,
                     double initial_alpha = 1) {
  std::vector<FlowStart> flows = UniformFlows(num_flows, params.capacity_bps / 100);
  flows[0].initial_rate_bps = params.capacity_bps;
  for (FlowStart& flow : flows) flow.initial_alpha = initial_alpha;
  DcqcnFluidModel model = DcqcnFluidModel::Create(params, flows).value();
  RunOptions options;
  options.duration_us = 2.5 * bound_ms * 1e3;
  options.sample_interval_us = 10;
  const Trace trace = model.Run(options).value();
  const absl::StatusOr<double> converged_us = ConvergenceTimeUs(trace, params.capacity_bps, 0.1);
  EXPECT_TRUE(converged_us.ok()) << converged_us.status();
  return converged_us.value_or(NAN) / 1e3;
}

// The bound (the convergence_*.txt data: 96.9 ms at N = 2, 35.9 ms at N = 10, 10.1 ms
// at N = 100) takes α = α* and marking only at Kmax, both of which slow convergence, so
// the model must come in under it; measured 38.4, 12.4 and 2.04 ms. The floor of a
// quarter of the bound catches a model that converges an order of magnitude too fast
// (R_AI counted in the wrong unit moves it by 8×). N = 100 comes in at a fifth: its 99
// small flows start at C/N already, so convergence is flow 0's multiplicative decrease
// alone, which from α = 1 halves the rate every τ where the bound cuts by α*/2 = 12 %.
// Started at α* (the bound's own assumption) it takes 3.14 ms, inside the quarter floor;
// ConvergesAtOneHundredFlowsWithinTheBoundFromAlphaStar holds that.
TEST(DcqcnFluidTest, ConvergesFromAnUnfairStartWithinTheAuthorsBound) {
  struct Point {
    int flows;
    double bound_ms;
    double floor_fraction;
  };
  double previous_ms = 1e9;
  for (const Point& point : {Point{2, 96.9, 0.25}, Point{10, 35.9, 0.25}, Point{100, 10.1, 0.15}}) {
    SCOPED_TRACE(testing::Message() << point.flows << " flows");
    const double converged_ms = ConvergenceMs(Conext16(4), point.flows, point.bound_ms);
    EXPECT_LT(converged_ms, point.bound_ms);
    EXPECT_GT(converged_ms, point.floor_fraction * point.bound_ms);
    EXPECT_LT(converged_ms, previous_ms);  // more flows converge faster
    previous_ms = converged_ms;
  }
}

TEST(DcqcnFluidTest, ConvergesAtOneHundredFlowsWithinTheBoundFromAlphaStar) {
  const DcqcnParams params = Conext16(4);
  const double alpha_star = ClosedFormFixedPoint(params, 100).value().alpha;  // 0.25
  const double converged_ms = ConvergenceMs(params, 100, 10.1, alpha_star);
  EXPECT_LT(converged_ms, 10.1);
  EXPECT_GT(converged_ms, 10.1 / 4);
}

// R_AI = 10 Mb/s (Fig. 3c's tuning) slows convergence: the authors' bound is 358 ms at
// N = 2; measured 138.5 ms, 2.6× under
// and 3.6× slower than at 40 Mb/s (the bound: 3.7×).
TEST(DcqcnFluidTest, ConvergesWithinTheAuthorsBoundWithSlowAdditiveIncrease) {
  DcqcnParams params = Conext16(4);
  params.rate_ai_bps = 10e6;
  const double converged_ms = ConvergenceMs(params, 2, 358);
  EXPECT_LT(converged_ms, 358);
  EXPECT_GT(converged_ms, 358.0 / 4);
  // Slower than with R_AI = 40 Mb/s (38.4 ms), as the bound is (358 against 96.9 ms).
  EXPECT_GT(converged_ms, 2.5 * ConvergenceMs(Conext16(4), 2, 96.9));
}

// At p = 0 the increase terms take their limits: R_T grows by R_AI per timer (1/T) and
// per byte counter (R/B) and R_C closes half the gap each event.
TEST(DcqcnFluidTest, UnmarkedFlowIncreasesAtTheLimitRates) {
  const DcqcnParams params = Conext16(4);
  const double start_bps = 4e9;
  DcqcnFluidModel model = DcqcnFluidModel::Create(params, UniformFlows(1, start_bps)).value();
  RunOptions options;
  options.duration_us = 1000;
  const Trace trace = model.Run(options).value();
  const TraceSample& last = trace.samples.back();
  EXPECT_EQ(last.queue_bytes, 0);
  // dR_T/dt = R_AI·(1/T + R_C/B): at least 40 Mb/s × (1/55 µs) × 1 ms = 727 Mb/s.
  const double timer_only_bps = 40e6 * 1000 / 55.0;
  EXPECT_GT(last.rate_target_bps[0] - start_bps, timer_only_bps);
  EXPECT_LT(last.rate_target_bps[0] - start_bps, 1.1 * timer_only_bps);
  EXPECT_GT(last.rate_current_bps[0], start_bps);
  EXPECT_LT(last.rate_current_bps[0], last.rate_target_bps[0]);
  // α decays as g/τ′ without marks: α(1 ms) = exp(−g·1 ms/τ′).
  EXPECT_NEAR(last.alpha[0], std::exp(-1000 / (256 * 55.0)), 1e-3);
}

TEST(DcqcnFluidTest, LateFlowGetsItsShare) {
  const DcqcnParams params = Conext16(4);
  std::vector<FlowStart> flows = UniformFlows(2, params.capacity_bps);
  flows[1].initial_rate_bps = params.capacity_bps / 10;
  flows[1].start_us = 20e3;
  DcqcnFluidModel model = DcqcnFluidModel::Create(params, flows).value();
  RunOptions options;
  options.duration_us = 200e3;
  options.sample_interval_us = 100;
  const Trace trace = model.Run(options).value();
  // Alone, flow 0 holds the link and flow 1 sends nothing.
  const WindowStats alone = Summarize(trace, params.capacity_bps, 10e3, 19.9e3).value();
  EXPECT_NEAR(alone.mean_rate_bps[0], params.capacity_bps, 0.01 * params.capacity_bps);
  EXPECT_EQ(alone.mean_rate_bps[1], 0);
  const WindowStats shared = Summarize(trace, params.capacity_bps, 150e3, 200e3).value();
  EXPECT_GT(shared.jain_fairness, 0.999);
  EXPECT_NEAR(shared.utilization, 1, 0.01);
}

TEST(DcqcnFluidTest, CutFloorBoundsOneCutAsRpMinDecFacDoes) {
  DcqcnParams params;
  const ModelUnits half = ToModelUnits(params);  // max_cut_fraction 0.5: α/2
  params.max_cut_fraction = 0.1;                  // rp_min_dec_fac = 90
  const ModelUnits floor = ToModelUnits(params);
  const DcqcnFlowState state{/*alpha=*/1, /*rate_target_pps=*/4e6, /*rate_current_pps=*/4e6};
  const MarkingTerms marked = MarkingTermsAt(half, 0.5);  // a CNP every τ, no increase
  // α = 1: the paper cuts R_C by α/2 = 50 % per CNP, the floor by 10 %: 5× slower.
  const double d_half = FlowDerivatives(half, marked, state, 4e6).rate_current_pps;
  const double d_floor = FlowDerivatives(floor, marked, state, 4e6).rate_current_pps;
  EXPECT_NEAR(d_floor / d_half, 0.2, 1e-6);
  // α = 0.1: α/2 = 5 % is under the floor's 10 %, the cut is the paper's.
  DcqcnFlowState small_alpha = state;
  small_alpha.alpha = 0.1;
  EXPECT_DOUBLE_EQ(FlowDerivatives(floor, marked, small_alpha, 4e6).rate_current_pps,
                   FlowDerivatives(half, marked, small_alpha, 4e6).rate_current_pps);
  params.max_cut_fraction = 1.5;
  EXPECT_THAT(std::string(ValidateParams(params).message()), HasSubstr("max_cut_fraction = 1.5"));
}

TEST(DcqcnFluidTest, HyperIncreaseAddsRHaiPerEventOncePastFastRecovery) {
  DcqcnParams params;  // the paper's: F = 5, T = 55 µs, B = 10 MB
  const ModelUnits plain = ToModelUnits(params);
  params.rate_hai_bps = 400e6;
  const ModelUnits hyper = ToModelUnits(params);
  const DcqcnFlowState state{/*alpha=*/0.1, /*rate_target_pps=*/3e6, /*rate_current_pps=*/2e6};
  // Unmarked: both stages pass F, every event adds R_HAI instead of R_AI (10× here).
  const MarkingTerms none = MarkingTermsAt(plain, 0);
  const double d_plain = FlowDerivatives(plain, none, state, 2e6).rate_target_pps;
  const double d_hyper = FlowDerivatives(hyper, none, state, 2e6).rate_target_pps;
  EXPECT_NEAR(d_hyper / d_plain, 10, 1e-9);
  // Marked often enough that fast recovery rarely completes: hyper adds almost nothing.
  const MarkingTerms marked = MarkingTermsAt(plain, 0.01);
  const double m_plain = FlowDerivatives(plain, marked, state, 2e6).rate_target_pps;
  const double m_hyper = FlowDerivatives(hyper, marked, state, 2e6).rate_target_pps;
  EXPECT_NEAR(m_hyper, m_plain, 1e-6 * std::abs(m_plain));
}

TEST(DcqcnFluidTest, TargetClampAfterTimerIncreaseRarelyClampsUnderFrequentCuts) {
  DcqcnParams params;
  params.tau_us = 4;      // firmware: a cut at most every 4 µs
  params.timer_us = 300;  // firmware: a timer increase every 300 µs
  const DcqcnFlowState state{/*alpha=*/0.5, /*rate_target_pps=*/10e6, /*rate_current_pps=*/5e6};
  const MarkingTerms marked = MarkingTermsAt(ToModelUnits(params), 0.05);
  auto d_target = [&](TargetClamp clamp) {
    params.target_clamp = clamp;
    return FlowDerivatives(ToModelUnits(params), marked, state, 5e6).rate_target_pps;
  };
  const double every = d_target(TargetClamp::kEveryCut);
  const double after_timer = d_target(TargetClamp::kAfterTimerIncrease);
  const double never = d_target(TargetClamp::kNever);
  EXPECT_LT(every, 0);  // R_T pulled down to R_C at the cut rate
  EXPECT_GE(never, 0);  // only increase terms
  // A timer event falls in a ~4 µs gap between cuts with probability ≈ 4/300.
  EXPECT_LT(std::abs(after_timer - never), 0.03 * std::abs(every - never));
  EXPECT_LT(after_timer, never);
}

TEST(DcqcnFluidTest, RefusesBadParametersNamingThem) {
  auto refused = [](DcqcnParams params) {
    return DcqcnFluidModel::Create(params, UniformFlows(2, 1e9)).status();
  };
  DcqcnParams params;
  params.pmax = 1.5;
  EXPECT_THAT(refused(params).message(), AllOf(HasSubstr("pmax = 1.5"), HasSubstr("(0, 1]")));
  EXPECT_EQ(refused(params).code(), absl::StatusCode::kInvalidArgument);
  params = DcqcnParams();
  params.kmax_bytes = 4000;
  EXPECT_THAT(refused(params).message(),
              AllOf(HasSubstr("kmax_bytes = 4000"), HasSubstr("must exceed kmin_bytes")));
  params = DcqcnParams();
  params.feedback_delay_us = -1;
  EXPECT_THAT(refused(params).message(),
              AllOf(HasSubstr("feedback_delay_us = -1"), HasSubstr("[0, 100000]")));
  params = DcqcnParams();
  params.packet_bytes = 0;
  EXPECT_THAT(refused(params).message(), HasSubstr("packet_bytes = 0"));
  params = DcqcnParams();
  params.tau_us = std::nan("");
  EXPECT_THAT(refused(params).message(), HasSubstr("tau_us = nan"));

  EXPECT_THAT(DcqcnFluidModel::Create(DcqcnParams(), {}).status().message(),
              HasSubstr("flows is empty"));
  std::vector<FlowStart> flows = UniformFlows(2, 50e9);
  EXPECT_THAT(DcqcnFluidModel::Create(DcqcnParams(), flows).status().message(),
              AllOf(HasSubstr("flows[0].initial_rate_bps = 5e+10"), HasSubstr("[0, 4e+10]")));
  EXPECT_THAT(DcqcnFluidModel::Create(DcqcnParams(), UniformFlows(1, 1e9), 20).status().message(),
              HasSubstr("step_us = 20"));
  EXPECT_THAT(ClosedFormFixedPoint(DcqcnParams(), 0).status().message(),
              HasSubstr("num_flows = 0"));
}

TEST(SummarizeTest, RefusesAnEmptyWindowAndMeasuresFairness) {
  Trace trace;
  TraceSample sample;
  sample.queue_bytes = 10;
  sample.rate_current_bps = {30, 10};
  trace.samples.push_back(sample);
  sample.time_us = 10;
  sample.queue_bytes = 30;
  trace.samples.push_back(sample);
  EXPECT_THAT(Summarize(trace, 40, 20, 30).status().message(), HasSubstr("no sample"));
  const WindowStats stats = Summarize(trace, 40, 0, 10).value();
  EXPECT_EQ(stats.samples, 2);
  EXPECT_DOUBLE_EQ(stats.mean_queue_bytes, 20);
  EXPECT_DOUBLE_EQ(stats.std_queue_bytes, 10);
  EXPECT_DOUBLE_EQ(stats.queue_std_over_mean, 0.5);
  EXPECT_DOUBLE_EQ(stats.jain_fairness, 40.0 * 40 / (2 * (900 + 100)));  // 0.8
  EXPECT_DOUBLE_EQ(stats.utilization, 1);
  // The last sample is out of the ±10 % band: never converged.
  EXPECT_EQ(ConvergenceTimeUs(trace, 40, 0.1).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::sim
