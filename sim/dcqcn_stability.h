// Small-signal stability of the DCQCN fluid model (sim/dcqcn_fluid.h) at its fixed point,
// the analysis behind CoNEXT'16 Fig. 3: N identical flows on one bottleneck, the loop
// q → p → (α, R_T, R_C) → Σ R_C → q linearized around (q*, α*, R_T*, R_C* = C/N), the
// phase margin read off the open-loop frequency response.
//
// The linearization is numerical: central differences of FlowDerivatives (the same
// right-hand sides Step integrates) give each flow's Jacobian A = ∂f/∂(α, R_T, R_C) and the
// input columns b = ∂f/∂p^ and c = ∂f/∂R^. Both p^ and R^ are τ* old in the model, so
// with D = e^(−jωτ*) a flow's response to the marking is
//   G(jω) = e_R_C · (jωI − A − c·e_R_Cᵀ·D)⁻¹ · b·D,
// the queue integrates the N flows' rates, Q = N·R_C/(jω), and the ramp's slope
// k = Pmax/(Kmax − Kmin) closes the loop: L(jω) = −k·N·G(jω)/(jω) (−: more marking
// means less rate; 1 + L = 0 is the characteristic equation). The phase margin is
// 180° + arg L at the gain crossover |L| = 1 (the smallest one when there are several).
// The authors' script (fluidmodel/dcqcn/stability.m) builds a hand-simplified transfer
// function with the delay on the whole loop instead; docs/benchmarks.md compares.
//
// Pure functions of their arguments; thread-compatible.
//
// Example:
//   DcqcnParams params = Conext16AnalysisParams(/*feedback_delay_us=*/100);
//   ASSIGN_OR_RETURN(LoopMargin margin, PhaseMargin(params, 10));
//   // margin.phase_margin_deg ≈ −5.6: the fixed point is unstable, the queue oscillates.
#ifndef WEFT_SIM_DCQCN_STABILITY_H_
#define WEFT_SIM_DCQCN_STABILITY_H_

#include <complex>

#include "absl/status/statusor.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {

// One flow linearized at the N-flow fixed point, in the model's units (packets, s).
struct LinearizedFlow {
  int num_flows = 0;
  double delay_s = 0;                 // τ*
  double ramp_slope_per_packet = 0;   // k = dp/dq
  DcqcnFlowState fixed_point;         // α*, R_T*, R_C*
  double marking_probability = 0;     // p*
  double jacobian[3][3] = {};         // A, rows and columns in DcqcnFlowState order
  double marking_input[3] = {};       // b = ∂f/∂p^
  double delayed_rate_input[3] = {};  // c = ∂f/∂R^
};

// Linearizes the model for `num_flows` identical flows. Fails with InvalidArgument on bad
// params or num_flows < 2 (one flow sits at R_C = C, where the clamp acts), and with
// FailedPrecondition when p* is out of the ramp's reach (p* > Pmax with AboveKmax::kMarkAll,
// or p* ≥ 1): the switch marks every packet there and the loop has no slope to linearize.
absl::StatusOr<LinearizedFlow> Linearize(const DcqcnParams& params, int num_flows);

// L(jω) at omega_rad_per_s > 0 (see the file comment).
std::complex<double> OpenLoopResponse(const LinearizedFlow& flow, double omega_rad_per_s);

struct LoopMargin {
  double phase_margin_deg = 0;  // in (−180, 180]; negative: the fixed point is unstable
  double crossover_rad_per_s = 0;
};

// Scans |L(jω)| over 1 rad/s to 10^8 rad/s (log-spaced), refines each crossing of 1 by
// bisection and returns the smallest margin. NotFound if |L| never crosses 1 there.
absl::StatusOr<LoopMargin> PhaseMargin(const LinearizedFlow& flow);
absl::StatusOr<LoopMargin> PhaseMargin(const DcqcnParams& params, int num_flows);

}  // namespace weft::sim

#endif  // WEFT_SIM_DCQCN_STABILITY_H_
