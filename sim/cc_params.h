// mlx5 DCQCN `cc_params` (the weft.v1.DcqcnParams an agent writes to a NIC) turned into
// the fluid model's DcqcnParams (sim/dcqcn_fluid.h), so the twin can run the settings the
// tuner would push. The switch side (link speed, ECN ramp) and the model's own knobs
// (loop delay, packet unit) come from a FabricSide, because no NIC parameter sets them.
// Callers: bench/sim/dcqcn_settings.cc today, the tuner's twin later.
//
// Mapping (units of shared/docs/fabric-facts.md §4; an unset field takes its firmware
// default from common/tunable_ranges.h, np_min_time_between_cnps, which has none, 4 µs):
//   g   = (1024 − rp_dce_tcp_g)/1024     (§4 reading: 1019 → 5/1024, 1020 → 1/256; older
//                                          docs read the field as g itself: check on hardware)
//   τ′  = rp_dce_tcp_rtt µs              (α decay interval without CNPs; the firmware's 1 µs
//                                          needs a model step of 0.2 µs: ModelStepUs)
//   τ   = max(np_min_time_between_cnps, rp_rate_reduce_monitor_period) µs: the NP sends at
//         most one CNP per interval and the RP cuts at most once per monitor period, so the
//         slower of the two paces the cuts; at least 1 µs (np = 0, "a CNP per marked
//         packet", becomes at most one cut per µs)
//   T   = rp_time_reset µs
//   B   = rp_byte_reset bytes; 0 (off) → 10^12 bytes, a counter that never fires in a run
//   F   = rp_threshold
//   R_AI = rp_ai_rate Mb/s (absolute, as the NIC applies it; not scaled with the link)
//   α₀  = rp_initial_alpha_value/1024 → MappedCcParams::initial_alpha (FlowStart)
//   C, Kmin, Kmax, Pmax, τ*, packet unit ← FabricSide
//
// What the fluid model cannot represent:
//   rp_gd: the model cuts by α/2 (before the floor), i.e. rp_gd = 11 only; any other value is refused
//     (changing the cut depth silently would misreport every result).
//   rp_min_dec_fac → max_cut_fraction = 1 − fac/100: one cut takes R_C·min(α/2, that)
//     (sim/dcqcn_fluid.h). fac ≤ 50 never binds (α ≤ 1); Barre's 80–98 bounds a cut to
//     2–20 %, which damps the deep cuts of the firmware's τ′ = 1 µs.
//   rp_hai_rate → rate_hai_bps: hyper increase once both stages passed F, with the stage
//     factor taken as 1 (a lower bound on the NIC's increase; sim/dcqcn_fluid.h).
//   rp_clamp_tgt_rate / _ati → target_clamp: 1 → R_T ← R_C on every cut; 0 / 1 (the
//     firmware's) → only when a timer increase came since the last cut, in the fluid model
//     a probability; 0 / 0 → never.
//   rp_min_rate, rp_max_rate, rp_rate_to_set_on_first_cnp: rates stay in [0, C] in the
//     model; listed when not at their defaults.
//   np_min_time_between_cnps is per NP port on the NIC (per flow in the model): in an
//     N→1 incast the receiver's CNPs are shared among N flows; not modelled.
//   np_cnp_dscp, np_cnp_prio*: the CNP's class; no effect in a single-bottleneck model.
//
// Pure functions; thread-safe.
//
// Example:
//   ASSIGN_OR_RETURN(MappedCcParams mapped,
//                    MapCcParams(FirmwareDefaultCcParams(), HpccFabricSide(100e9)));
//   std::vector<FlowStart> flows = UniformFlows(4, mapped.params.capacity_bps);
//   for (FlowStart& f : flows) f.initial_alpha = mapped.initial_alpha;
#ifndef WEFT_SIM_CC_PARAMS_H_
#define WEFT_SIM_CC_PARAMS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/weft/v1/desired_state.pb.h"
#include "sim/dcqcn_fluid.h"

namespace weft::sim {

// What the NIC does not set: the bottleneck link, its switch's ECN ramp, and the model's
// loop delay and counting unit (sim/dcqcn_fluid.h).
struct FabricSide {
  double link_bps = 100e9;  // C, in (0, 800 Gb/s]
  double kmin_bytes = 400e3;
  double kmax_bytes = 1600e3;
  double pmax = 0.2;
  AboveKmax above_kmax = AboveKmax::kMarkAll;
  double feedback_delay_us = 4;  // τ*
  double packet_bytes = 1000;    // the model's unit; the HPCC simulator's packet size
};

// The HPCC simulator's firmware-like switch (fabric-facts §3): Kmin = 100 KB and
// Kmax = 400 KB per 25 Gb/s of link, Pmax = 0.2; at 100 Gb/s 400 KB and 1600 KB.
FabricSide HpccFabricSide(double link_bps);

struct MappedCcParams {
  DcqcnParams params;
  double initial_alpha = 1;  // rp_initial_alpha_value / 1024, for FlowStart
  // One line per set value the model ignores or approximates ("rp_min_dec_fac = 90: ...").
  std::vector<std::string> not_modelled;
};

// Maps `cc` (unset fields: firmware defaults) onto the fluid model. Fails with
// InvalidArgument naming the parameter, its value and the accepted range when a field is
// out of its mlx5 range (common/tunable_ranges.h), rp_gd is not 11, the fabric side is out
// of range, or the result fails the model's ValidateParams (e.g. rp_ai_rate above C).
absl::StatusOr<MappedCcParams> MapCcParams(const weft::v1::DcqcnParams& cc,
                                           const FabricSide& fabric);

// The Euler step DcqcnFluidModel::Create accepts for `params`: 1 µs, or a fifth of τ or
// τ′ when that is shorter (0.2 µs for the firmware's τ′ = 1 µs).
double ModelStepUs(const DcqcnParams& params);

// Presets, as cc_params values (every field the mapping reads is set).
// ConnectX firmware defaults (np_min_time_between_cnps = 4, fabric-facts §4 "2–4").
weft::v1::DcqcnParams FirmwareDefaultCcParams();
// The CoNEXT'16 / SIGCOMM'15 values (fabric-facts §1): G = 1020 (g = 1/256), τ′ = 55,
// τ = 50, T = 55, F = 5, R_AI = 40 Mb/s, α₀ = 1023/1024. B = 10 MB exceeds
// rp_byte_reset's 32767 bytes, so the byte counter is off (0): at 40 Gb/s 10 MB takes
// 2 ms against T = 55 µs, so the timer drives increase in the paper's setting too.
weft::v1::DcqcnParams PaperCcParams();
// Barre's hand-tuned direction (ATC'25 Table 2, fabric-facts §7), the middle of each
// range: np_min_time_between_cnps 1 (0–2), rp_min_dec_fac 90 (80–98),
// rp_rate_reduce_monitor_period 2 (1–4), rp_ai_rate 10 (8–20), rp_time_reset 50
// (20–100); the rest firmware defaults.
weft::v1::DcqcnParams BarreCcParams();

struct CcPreset {
  std::string name;  // "firmware defaults", "paper", "Barre"
  weft::v1::DcqcnParams cc;
};
std::vector<CcPreset> CcPresets();

}  // namespace weft::sim

#endif  // WEFT_SIM_CC_PARAMS_H_
