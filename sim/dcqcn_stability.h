// Small-signal stability of the DCQCN fluid model (sim/dcqcn_fluid.h) at its fixed point,
// the analysis behind CoNEXT'16 Fig. 3: N identical flows on one bottleneck, the loop
// q → p → (α, R_T, R_C) → Σ R_C → q linearized around (q*, α*, R_T*, R_C* = C/N), the
// phase margin read off the open-loop frequency response.
//
// Two linearizations of the same equations (fabric-facts §1), each a LinearizedFlow:
// a flow's Jacobian A = ∂f/∂(α, R_T, R_C) and the input columns b = ∂f/∂p^ and c = ∂f/∂R^
// of the τ*-old marking and rate (D = e^(−jωτ*)); the queue integrates the N flows'
// rates, Q = N·R_C/(jω), and the ramp's slope k = Pmax/(Kmax − Kmin) closes the loop.
//
//  - Linearize: exact. Central differences of FlowDerivatives (the right-hand sides
//    DcqcnFluidModel::Step integrates) at the exact fixed point. It predicts the
//    simulated model: the sign of the margin, where the unstable band ends and the
//    period of an oscillating queue (sim/dcqcn_stability_test.cc).
//  - LinearizeAsPublished: the paper's own (its appendix A and the authors' stability.m):
//    the Bernoulli terms (1 − p)^n expanded to first order in p, α updated per packet,
//    the delayed and present rate exchanged in dR_C/dt, at the cube-root p*, the loop
//    opened at the delay. It reproduces the published Fig. 3a-3c margins to 0.1°, but
//    not the model's time domain: the first-order expansion is used where n·p* is not
//    small (B·p* ≈ 78, F·T·R*·p* ≈ 1.1 at N = 10). docs/benchmarks.md, "Phase margin
//    against N (Fig. 3)", takes the difference apart.
//
// The phase margin is 180° + arg L at the gain crossover |L| = 1 (the smallest one when
// there are several); 1 + L = 0 is the characteristic equation. Where the loop is opened
// changes the margin, not the characteristic equation (LoopOpening).
//
// Pure functions of their arguments; thread-compatible.
//
// Example:
//   DcqcnParams params = Conext16AnalysisParams(/*feedback_delay_us=*/100);
//   ASSIGN_OR_RETURN(LoopMargin margin, PhaseMargin(params, 10));
//   // margin.phase_margin_deg ≈ −5.6: the fixed point is unstable, the queue oscillates.
//   ASSIGN_OR_RETURN(LinearizedFlow published, LinearizeAsPublished(params, 10));
//   ASSIGN_OR_RETURN(LoopMargin paper, PhaseMargin(published));  // ≈ −17.9°, as Fig. 3a
#ifndef WEFT_SIM_DCQCN_STABILITY_H_
#define WEFT_SIM_DCQCN_STABILITY_H_

#include <complex>

#include "absl/status/statusor.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {

// Where the loop is opened to read its margin. Both openings give the same characteristic
// equation, so the same verdict on stability, but different margins.
enum class LoopOpening {
  // At the marking: L = −k·N·G(jω)/(jω) with G = e_R_Cᵀ(jωI − A − c·e_R_Cᵀ·D)⁻¹·b·D, the
  // τ*-old rate R^ feeding back inside G.
  kAtMarking,
  // At the delay, every τ*-old path (p^ and R^) at once:
  // L = −D·e_R_Cᵀ(jωI − A)⁻¹(b·k·N/(jω) + c). The authors' stability.m does this.
  kAtDelay,
};

// Which p* a linearization is taken at (ClosedFormFixedPoint has both).
enum class FixedPointMarking {
  kExact,     // the root of a²α*/((b + d)(c + e)) = τ²·R_AI·R_C*
  kCubeRoot,  // the paper's approximation, which the published Fig. 3 uses
};

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
  LoopOpening opening = LoopOpening::kAtMarking;
};

// Linearizes the model for `num_flows` identical flows at the exact p*, or at the cube-root
// one (to see what the approximate fixed point alone changes). Fails with InvalidArgument on bad
// params or num_flows < 2 (one flow sits at R_C = C, where the clamp acts), and with
// FailedPrecondition when p* is out of the ramp's reach (p* > Pmax with AboveKmax::kMarkAll,
// or p* ≥ 1): the switch marks every packet there and the loop has no slope to linearize.
absl::StatusOr<LinearizedFlow> Linearize(const DcqcnParams& params, int num_flows,
                                         FixedPointMarking marking = FixedPointMarking::kExact);

// The CoNEXT'16 linearization (appendix A, as the authors' stability.m evaluates it), opened
// at the delay. The fixed point's α*, R_T* are Fig. 1's exact expressions at the cube-root
// p*; the derivatives are those of the right-hand sides with (1 − p)^n ≈ 1 − n·p, in
// A = 1/B + 1/(T·R*) and h = 1/2 + A/4 (per flow, at p = p^ = p*, R = R_C* = R^ = C/N):
//   cut rate a/τ ≈ p·R^; byte + timer events per packet b + d ≈ A − 2h·p; the same after
//   fast recovery c + e ≈ A − (1 + 2F + A/2)·p, A held constant; α follows p per packet
//   (pole at g·R*, unit gain) instead of per τ′ (pole at g/τ′, gain τ′·R*);
//   in dR_C/dt the entries of R_C and R^ exchanged, in dR_T/dt R_AI·A on the present rate
//   as well as on R^. `marking` other than the paper's cube root shows what the
//   approximate p* does to it. Same errors as Linearize.
absl::StatusOr<LinearizedFlow> LinearizeAsPublished(
    const DcqcnParams& params, int num_flows,
    FixedPointMarking marking = FixedPointMarking::kCubeRoot);

// L(jω) at omega_rad_per_s > 0, opened where flow.opening says.
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
