#include "sim/dcqcn_stability.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::sim {
namespace {

using Complex = std::complex<double>;

// The state as a vector in DcqcnFlowState order (α, R_T, R_C), for the Jacobian's columns.
double& Component(DcqcnFlowState& state, int i) {
  return i == 0 ? state.alpha : i == 1 ? state.rate_target_pps : state.rate_current_pps;
}

// Central difference of the three derivatives in one argument: `derivatives_at(x)` is the
// right-hand side with that argument set to x. A relative step of 1e-6 keeps truncation
// and rounding errors both near 1e-10 of the terms, plenty for a margin in degrees.
void CentralDifference(const std::function<DcqcnFlowState(double)>& derivatives_at, double x,
                       double column[3]) {
  const double h = 1e-6 * std::max(std::abs(x), 1e-12);  // every x is > 0 at a fixed point
  DcqcnFlowState up = derivatives_at(x + h), down = derivatives_at(x - h);
  for (int i = 0; i < 3; ++i) column[i] = (Component(up, i) - Component(down, i)) / (2 * h);
}

// R_T* from dR_T/dt = 0: the derivative is affine in R_T (−(R_T − R_C)/τ·cut + increase),
// so two evaluations give its root without a second copy of the equation.
double SolveTargetRate(const ModelUnits& units, const MarkingTerms& marking, DcqcnFlowState state) {
  state.rate_target_pps = state.rate_current_pps;
  const double at_current =
      FlowDerivatives(units, marking, state, state.rate_current_pps).rate_target_pps;
  state.rate_target_pps = 2 * state.rate_current_pps;
  const double at_double =
      FlowDerivatives(units, marking, state, state.rate_current_pps).rate_target_pps;
  const double slope = (at_double - at_current) / state.rate_current_pps;
  return state.rate_current_pps - at_current / slope;
}

Complex Det3(const Complex m[3][3]) {
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
         m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

// The phase of L in degrees plus 180, wrapped into (−180, 180].
double MarginDeg(Complex loop) {
  double deg = 180 + std::arg(loop) * 180 / M_PI;
  while (deg > 180) deg -= 360;
  while (deg <= -180) deg += 360;
  return deg;
}

// log|L| − 0 at ω = 10^x: its sign change brackets a gain crossover.
double LogGain(const LinearizedFlow& flow, double log10_omega) {
  return std::log(std::abs(OpenLoopResponse(flow, std::pow(10, log10_omega))));
}

// The fixed point both linearizations start from: α*, R_C* = C/N and R_T* (Fig. 1's
// exact expressions) at the chosen p*, with the ramp's slope and the delay.
absl::StatusOr<LinearizedFlow> FixedPointOf(const DcqcnParams& params, int num_flows,
                                            FixedPointMarking marking) {
  if (num_flows < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_flows = ", num_flows, " is out of range: accepted [2, inf) (one flow sits at C)"));
  }
  ASSIGN_OR_RETURN(const FixedPoint fp, ClosedFormFixedPoint(params, num_flows));
  const double p =
      marking == FixedPointMarking::kExact ? fp.marking_probability : fp.approx_marking_probability;
  if (p >= 1 || (p > params.pmax && params.above_kmax == AboveKmax::kMarkAll)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "p* = ", p, " for ", num_flows, " flows is beyond the marking ramp (Pmax = ", params.pmax,
        "): the switch marks every packet there and the loop has no slope"));
  }
  const ModelUnits units = ToModelUnits(params);
  LinearizedFlow flow;
  flow.num_flows = num_flows;
  flow.delay_s = params.feedback_delay_us * 1e-6;
  flow.ramp_slope_per_packet = params.pmax / (units.kmax_packets - units.kmin_packets);
  flow.marking_probability = p;
  DcqcnFlowState& x = flow.fixed_point;
  x.rate_current_pps = units.capacity_pps / num_flows;
  x.alpha = -std::expm1(units.tau_prime_s * x.rate_current_pps * std::log1p(-p));
  x.rate_target_pps = SolveTargetRate(units, MarkingTermsAt(units, p), x);
  return flow;
}

}  // namespace

absl::StatusOr<LinearizedFlow> Linearize(const DcqcnParams& params, int num_flows,
                                         FixedPointMarking marking) {
  ASSIGN_OR_RETURN(LinearizedFlow flow, FixedPointOf(params, num_flows, marking));
  const ModelUnits units = ToModelUnits(params);
  const double p = flow.marking_probability;
  const MarkingTerms marking_terms = MarkingTermsAt(units, p);
  DcqcnFlowState x = flow.fixed_point;
  const double r_hat = x.rate_current_pps;

  double column[3];
  for (int j = 0; j < 3; ++j) {
    CentralDifference(
        [&](double v) {
          DcqcnFlowState moved = x;
          Component(moved, j) = v;
          return FlowDerivatives(units, marking_terms, moved, r_hat);
        },
        Component(x, j), column);
    for (int i = 0; i < 3; ++i) flow.jacobian[i][j] = column[i];
  }
  CentralDifference(
      [&](double v) { return FlowDerivatives(units, MarkingTermsAt(units, v), x, r_hat); }, p,
      flow.marking_input);
  CentralDifference([&](double v) { return FlowDerivatives(units, marking_terms, x, v); }, r_hat,
                    flow.delayed_rate_input);
  return flow;
}

absl::StatusOr<LinearizedFlow> LinearizeAsPublished(const DcqcnParams& params, int num_flows,
                                                    FixedPointMarking marking) {
  ASSIGN_OR_RETURN(LinearizedFlow flow, FixedPointOf(params, num_flows, marking));
  flow.opening = LoopOpening::kAtDelay;
  const ModelUnits u = ToModelUnits(params);
  const double p = flow.marking_probability, alpha = flow.fixed_point.alpha;
  const double r = flow.fixed_point.rate_current_pps, r_t = flow.fixed_point.rate_target_pps;
  const double gap = r_t - r;  // R_T* − R_C*
  const double a = 1 / u.byte_counter_packets + 1 / (u.timer_s * r);
  const double h = 0.5 + a / 4;
  // Events per packet, first order in p: b + d and, after F steps, c + e.
  const double events = a - 2 * h * p;
  const double events_after_recovery = a - (1 + 2 * u.fast_recovery_steps + a / 2) * p;
  enum { kAlpha = 0, kTarget = 1, kCurrent = 2 };
  double(&jac)[3][3] = flow.jacobian;
  double* b = flow.marking_input;
  double* c = flow.delayed_rate_input;
  // dα/dt: per packet, g·R*·(p^ − α).
  jac[kAlpha][kAlpha] = -u.g * r;
  b[kAlpha] = u.g * r;
  c[kAlpha] = 0;
  // dR_T/dt = −(R_T − R_C)·p^·R^ + R_AI·R^·(c + e).
  jac[kTarget][kAlpha] = 0;
  jac[kTarget][kTarget] = -p * r;
  jac[kTarget][kCurrent] = p * r + a * u.rate_ai_pps;  // R_AI·A here as well as in c
  b[kTarget] = -gap * r - u.rate_ai_pps * r * (1 + 2 * u.fast_recovery_steps + a / 2);
  c[kTarget] = -gap * p + u.rate_ai_pps * events_after_recovery;
  // dR_C/dt = −R_C·α·p^·R^/2 + (R_T − R_C)/2·R^·(b + d), the R_C and R^ entries exchanged.
  jac[kCurrent][kAlpha] = -0.5 * p * r * r;
  jac[kCurrent][kTarget] = 0.5 * r * events;
  jac[kCurrent][kCurrent] = -0.5 * p * r * alpha + 0.5 * gap * events;  // ∂/∂R^
  b[kCurrent] = -0.5 * r * r * alpha - h * r * gap;
  c[kCurrent] = -0.5 * p * r * alpha - 0.5 * r * events;  // ∂/∂R_C
  return flow;
}

std::complex<double> OpenLoopResponse(const LinearizedFlow& flow, double omega_rad_per_s) {
  const Complex s(0, omega_rad_per_s);
  const Complex delay = std::exp(-s * flow.delay_s);
  const double queue_gain = flow.ramp_slope_per_packet * flow.num_flows;  // p per R_C, times s
  Complex m[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m[i][j] = (i == j ? s : 0.0) - flow.jacobian[i][j];
  }
  if (flow.opening == LoopOpening::kAtDelay) {
    // (sI − A)⁻¹·(b·k·N/s + c), its R_C entry by Cramer's rule.
    const Complex det = Det3(m);
    for (int i = 0; i < 3; ++i) {
      m[i][2] = flow.marking_input[i] * queue_gain / s + flow.delayed_rate_input[i];
    }
    return -delay * Det3(m) / det;
  }
  // M = sI − A − c·e_R_Cᵀ·D; G = (M⁻¹·b·D)_R_C by Cramer's rule.
  for (int i = 0; i < 3; ++i) m[i][2] -= flow.delayed_rate_input[i] * delay;
  const Complex det = Det3(m);
  for (int i = 0; i < 3; ++i) m[i][2] = flow.marking_input[i] * delay;
  const Complex rate_per_marking = Det3(m) / det;
  return -queue_gain * rate_per_marking / s;
}

absl::StatusOr<LoopMargin> PhaseMargin(const LinearizedFlow& flow) {
  constexpr double kLowLog10 = 0, kHighLog10 = 8;
  constexpr int kScanPoints = 4000;
  bool found = false;
  LoopMargin worst;
  double prev_x = kLowLog10, prev_gain = LogGain(flow, prev_x);
  for (int k = 1; k <= kScanPoints; ++k) {
    const double x = kLowLog10 + (kHighLog10 - kLowLog10) * k / kScanPoints;
    const double gain = LogGain(flow, x);
    if ((prev_gain > 0) != (gain > 0)) {
      double low = prev_x, high = x;  // log gain changes sign between them
      const bool falling = prev_gain > 0;
      for (int i = 0; i < 60; ++i) {
        const double mid = (low + high) / 2;
        ((LogGain(flow, mid) > 0) == falling ? low : high) = mid;
      }
      const double omega = std::pow(10, (low + high) / 2);
      const double margin = MarginDeg(OpenLoopResponse(flow, omega));
      if (!found || margin < worst.phase_margin_deg) worst = {margin, omega};
      found = true;
    }
    prev_x = x;
    prev_gain = gain;
  }
  if (!found) {
    return absl::NotFoundError(absl::StrCat("|L(jω)| does not cross 1 between 1 and 1e8 rad/s for ",
                                            flow.num_flows, " flows"));
  }
  return worst;
}

absl::StatusOr<LoopMargin> PhaseMargin(const DcqcnParams& params, int num_flows) {
  ASSIGN_OR_RETURN(const LinearizedFlow flow, Linearize(params, num_flows));
  return PhaseMargin(flow);
}

}  // namespace weft::sim
