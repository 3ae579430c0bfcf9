// The DCQCN fluid model of CoNEXT'16 ("ECN or Delay: Lessons Learnt from Analysis of
// DCQCN and TIMELY", Zhu et al., Fig. 1): N flows share one bottleneck of capacity C
// whose queue marks ECN with the RED ramp (Kmin, Kmax, Pmax); each flow integrates its
// current rate R_C, target rate R_T and congestion estimate α from the marking
// probability and its own rate seen one control-loop delay τ* ago.
// shared/docs/fabric-facts.md §1 writes the equations down; this file follows it.
//
// The model counts packets: the Bernoulli exponents ((1 - p)^(τ·R), (1 - p)^(-B)) count
// the units R and B are expressed in, so `packet_bytes` is part of the model, not a
// display unit (fabric-facts §2, "Units matter"; sim/dcqcn_fluid_test.cc says which
// packet size reproduces which published point).
//
// Integration: forward Euler with a fixed step (1 µs by default, 10× finer than the
// authors' delay-differential solver's largest step); the delayed p and R_C are read
// from a ring buffer of the last τ*/step steps. The authors' clamps hold: dR/dt ≤ 0
// while R ≥ C (for R_C and R_T), dq/dt ≥ 0 while q ≤ 0; at p = 0 the event-rate
// fractions take their limits (1/B and 1/(T·R)).
//
// Pure logic with no clock or I/O. A DcqcnFluidModel is not thread-safe: one thread
// steps it; separate models share nothing.
//
// Example:
//   DcqcnParams params;  // the paper's parameters, 1 KB packets, τ* = 4 µs
//   ASSIGN_OR_RETURN(DcqcnFluidModel model,
//                    DcqcnFluidModel::Create(params, UniformFlows(10, params.capacity_bps)));
//   ASSIGN_OR_RETURN(Trace trace, model.Run({.duration_us = 200e3, .sample_interval_us = 10}));
//   ASSIGN_OR_RETURN(WindowStats stats, Summarize(trace, 100e3, 200e3));
#ifndef WEFT_SIM_DCQCN_FLUID_H_
#define WEFT_SIM_DCQCN_FLUID_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft::sim {

// What the switch does to a queue above Kmax.
enum class AboveKmax {
  // Marks every packet (p = 1): what a RED/ECN switch does, and the authors' scripts.
  kMarkAll,
  // Continues the ramp, p = (q - Kmin)/(Kmax - Kmin)·Pmax up to 1: the marking the
  // authors' stability analysis linearizes (q* = (p*/Pmax)(Kmax - Kmin) + Kmin for
  // every N, fabric-facts §1), and the one under which Fig. 4's "64 flows stable" holds
  // with 1 KB packets (sim/dcqcn_fluid_test.cc).
  kExtendRamp,
};

// When a cut also sets R_T ← R_C (mlx5 rp_clamp_tgt_rate / rp_clamp_tgt_rate_ati).
enum class TargetClamp {
  // On every cut: the paper's model (rp_clamp_tgt_rate = 1).
  kEveryCut,
  // Only when a timer increase happened since the last cut (rp_clamp_tgt_rate = 0,
  // _ati = 1, the firmware default). In the fluid model the R_T ← R_C relaxation is
  // weighted by the probability of a timer event within the mean gap between cuts,
  // 1 − exp(−(timer events/s)·τ/a), a = P(a CNP in τ): cuts every few µs under a 300 µs
  // timer leave R_T where it was, so fast recovery returns R_C to it.
  kAfterTimerIncrease,
  // Never (both flags 0): R_T only grows.
  kNever,
};

// The switch's ECN ramp, the flows' DCQCN parameters and the loop delay. Defaults are
// the CoNEXT'16 parameters (fabric-facts §1) with 1 KB packets (the 8000-bit packets of
// the authors' stability script) and τ* = 4 µs. Kilo- and mega- are decimal (5 KB =
// 5000 bytes, 10 MB = 10^7 bytes), as in the authors' scripts.
struct DcqcnParams {
  double capacity_bps = 40e9;  // C
  double kmin_bytes = 5e3;     // Kmin
  double kmax_bytes = 200e3;   // Kmax
  double pmax = 0.01;          // marking probability at Kmax
  AboveKmax above_kmax = AboveKmax::kMarkAll;
  double g = 1.0 / 256;              // α gain
  double tau_us = 50;                // τ: CNP generation interval
  double tau_prime_us = 55;          // τ′: α decay interval without CNPs
  double timer_us = 55;              // T: rate-increase timer
  double byte_counter_bytes = 10e6;  // B
  int fast_recovery_steps = 5;       // F
  double rate_ai_bps = 40e6;         // R_AI
  double feedback_delay_us = 4;      // τ*: control-loop delay
  double packet_bytes = 1000;        // the unit the model counts in (0.125 = bits)
  // The largest share of R_C one cut may take: mlx5's rp_min_dec_fac floor (the new rate
  // is at least fac % of the old, fabric-facts §4), 1 − fac/100. A cut is
  // R_C·min(α/2, max_cut_fraction); the default 0.5 (fac = 50, the firmware's) never binds
  // because α ≤ 1, so it leaves the CoNEXT'16 model exactly as published.
  double max_cut_fraction = 0.5;
  // Hyper increase (mlx5 rp_hai_rate, fabric-facts §3): once both the byte and the timer
  // stage passed F, an increase event adds R_HAI to R_T instead of R_AI. The fluid model
  // takes the stage factor (min stage − F + 1) as 1, a lower bound on the NIC's increase,
  // and the probability that both stages passed F as min((1 − p)^(F·B), (1 − p)^(F·T·R)).
  // 0 = no hyper stage, the paper's model.
  double rate_hai_bps = 0;
  TargetClamp target_clamp = TargetClamp::kEveryCut;
};

// The set the CoNEXT'16 results are checked against (sim/dcqcn_fluid_test.cc,
// sim/dcqcn_stability_test.cc): the defaults (the paper's parameters, 1 KB packets) with
// the ramp continued above Kmax, the marking the authors' analysis linearizes.
DcqcnParams Conext16AnalysisParams(double feedback_delay_us);

// Refuses a parameter out of its range with a message naming it, its value and the range.
absl::Status ValidateParams(const DcqcnParams& params);

// RED marking probability at a queue of `queue_bytes`: 0 up to Kmin, a ramp to Pmax at
// Kmax, then 1 or the ramp continued (params.above_kmax).
double MarkingProbability(const DcqcnParams& params, double queue_bytes);

// The fixed point for `num_flows` identical flows (CoNEXT'16 §3.2, fabric-facts §1).
// p* solves a²α*/((b + d)(c + e)) = τ²·R_AI·R_C* exactly (bisection; the left side
// rises with p); the paper's cube-root formula, its Taylor expansion at p = 0, is kept
// beside it: it overestimates p* by 19 % at N = 2 and 30 % at N = 10 (1 KB packets).
// It assumes the paper's model: the cut is α/2 (max_cut_fraction does not bind at α*,
// which holds while α*/2 ≤ max_cut_fraction; α* is small at a fixed point), no hyper
// increase and R_T clamped on every cut (rate_hai_bps and target_clamp are not read).
struct FixedPoint {
  double rate_bps = 0;                    // R_C* = C/N
  double marking_probability = 0;         // p*, exact
  double approx_marking_probability = 0;  // the paper's cube-root approximation
  double queue_bytes = 0;                 // q* = (p*/Pmax)(Kmax - Kmin) + Kmin (exact p*)
  double approx_queue_bytes = 0;          // the same from the approximate p*
  double alpha = 0;                       // α* = 1 - (1 - p*)^(τ′·C/N)
  // p* > Pmax: the ramp cannot deliver p*, so q* lies above Kmax where the switch marks
  // every packet; the model has no equilibrium there and the queue rides at Kmax.
  bool beyond_ramp = false;
};
absl::StatusOr<FixedPoint> ClosedFormFixedPoint(const DcqcnParams& params, int num_flows);

// The parameters in the units the model integrates in: packets, packets/s, seconds.
struct ModelUnits {
  double capacity_pps = 0;
  double rate_ai_pps = 0;
  double byte_counter_packets = 0;
  double kmin_packets = 0;
  double kmax_packets = 0;
  double tau_s = 0;
  double tau_prime_s = 0;
  double timer_s = 0;
  double fast_recovery_steps = 0;
  double g = 0;
  double max_cut_fraction = 0.5;
  double rate_hai_pps = 0;
  TargetClamp target_clamp = TargetClamp::kEveryCut;
};
ModelUnits ToModelUnits(const DcqcnParams& params);

// The factors of Fig. 1 that depend on the delayed marking probability p^ alone; every
// flow of a step shares them (computing them once per step keeps Step cheap).
struct MarkingTerms {
  double p = 0;
  double log_keep = 0;                // log(1 - p); 0 at p = 0 and p = 1
  double byte_events_per_packet = 0;  // p / ((1 - p)^(-B) - 1)
  double byte_after_recovery = 1;     // (1 - p)^(F·B)
};
MarkingTerms MarkingTermsAt(const ModelUnits& units, double p);

// One flow's state, or its time derivative, in the model's units.
struct DcqcnFlowState {
  double alpha = 0;
  double rate_target_pps = 0;   // R_T
  double rate_current_pps = 0;  // R_C
};

// dα/dt, dR_T/dt and dR_C/dt of Fig. 1 for one flow whose rate one loop delay ago was
// delayed_rate_pps (R^), under the delayed marking `marking` (p^); a cut takes
// R_C·min(α/2, max_cut_fraction) (the paper's α/2 unless rp_min_dec_fac binds); hyper
// increase and the target clamp as DcqcnParams says. Without the clamps
// at R ≥ C: Step applies them; the linearization (sim/dcqcn_stability.h) works at a
// fixed point below C, where they do not act.
DcqcnFlowState FlowDerivatives(const ModelUnits& units, const MarkingTerms& marking,
                               const DcqcnFlowState& state, double delayed_rate_pps);

// One flow's start: R_C = R_T = initial_rate_bps from start_us on (absent before).
struct FlowStart {
  double initial_rate_bps = 0;
  double start_us = 0;
  double initial_alpha = 1;
};

// `num_flows` flows starting together at `rate_bps` (the authors start at line rate).
std::vector<FlowStart> UniformFlows(int num_flows, double rate_bps);

struct RunOptions {
  double duration_us = 0;
  // A sample is taken at t = 0 and every sample_interval_us (rounded to whole steps).
  double sample_interval_us = 10;
};

struct TraceSample {
  double time_us = 0;
  double queue_bytes = 0;
  double marking_probability = 0;        // p(q(t)), not delayed
  std::vector<double> rate_current_bps;  // R_C per flow
  std::vector<double> rate_target_bps;   // R_T per flow
  std::vector<double> alpha;             // α per flow
};

struct Trace {
  std::vector<TraceSample> samples;
};

class DcqcnFluidModel {
 public:
  // Validates params (ValidateParams), the flows (at least one; rates in [0, C], start
  // times ≥ 0, α in [0, 1]) and step_us (in (0, 10], at most τ*, τ and τ′ allowing).
  static absl::StatusOr<DcqcnFluidModel> Create(const DcqcnParams& params,
                                                std::vector<FlowStart> flows, double step_us = 1);

  // Integrates for options.duration_us and returns the samples taken on the way. The
  // model keeps its state: a second Run continues from where the first stopped.
  // Fails on a negative duration or a sample interval that is not positive.
  absl::StatusOr<Trace> Run(const RunOptions& options);

  // One Euler step of step_us.
  void Step();

  double time_us() const { return static_cast<double>(step_count_) * step_us_; }
  double queue_bytes() const { return queue_packets_ * params_.packet_bytes; }
  int num_flows() const { return static_cast<int>(flows_.size()); }
  TraceSample Sample() const;

 private:
  DcqcnFluidModel(const DcqcnParams& params, std::vector<FlowStart> flows, double step_us);

  bool Active(int flow) const;

  DcqcnParams params_;
  std::vector<FlowStart> flows_;
  double step_us_;
  double step_s_;
  ModelUnits units_;

  int64_t step_count_ = 0;
  double queue_packets_ = 0;
  std::vector<double> rate_current_pps_;
  std::vector<double> rate_target_pps_;
  std::vector<double> alpha_;
  std::vector<bool> started_;
  // The last delay_steps_ + 1 values of p and of each flow's R_C; slot
  // step_count_ % history_len_ holds the present.
  int delay_steps_;
  int history_len_;
  std::vector<double> p_history_;
  std::vector<double> rate_history_pps_;  // [slot * num_flows + flow]
};

// One flow's reaction point in the model's units (packets/s), for models that own their
// queues and feed a flow its marking probability (sim/pfc_fluid.h).
struct ReactionPoint {
  double rate_current_pps = 0;  // R_C
  double rate_target_pps = 0;   // R_T
  double alpha = 1;
};

// One flow's Euler step of step_s: fabric-facts §1's dα/dt, dR_T/dt and dR_C/dt with the
// marking probability p_delayed and the flow's rate rate_delayed_pps seen τ* ago, the
// authors' clamp at params.capacity_bps. DcqcnFluidModel::Step runs it per flow. The terms
// that depend only on p are kept between calls with the same p (every flow of one
// bottleneck in one step), so a stepper serves one model on one thread.
class ReactionPointStepper {
 public:
  ReactionPointStepper(const DcqcnParams& params, double step_s);
  ReactionPointStepper(const ModelUnits& units, double step_s);
  void Step(double p_delayed, double rate_delayed_pps, ReactionPoint* flow);

 private:
  ModelUnits units_;
  double step_s_;
  // Of the last p (FlowDerivatives' terms that depend on p alone).
  MarkingTerms marking_;
  bool has_marking_ = false;
};

// Statistics over the samples with from_us ≤ time ≤ to_us.
struct WindowStats {
  int samples = 0;
  double mean_queue_bytes = 0;
  double std_queue_bytes = 0;
  double queue_std_over_mean = 0;     // 0 when the mean queue is 0
  std::vector<double> mean_rate_bps;  // each flow's mean R_C
  double jain_fairness = 0;           // of mean_rate_bps: 1 = equal shares
  double utilization = 0;             // Σ mean R_C / C
};
absl::StatusOr<WindowStats> Summarize(const Trace& trace, double capacity_bps, double from_us,
                                      double to_us);

// The first sample time from which every flow's R_C stays within ±tolerance_fraction of
// capacity_bps / (number of flows) to the end of the trace. NotFound if the last sample
// is outside the band.
absl::StatusOr<double> ConvergenceTimeUs(const Trace& trace, double capacity_bps,
                                         double tolerance_fraction);

}  // namespace weft::sim

#endif  // WEFT_SIM_DCQCN_FLUID_H_
