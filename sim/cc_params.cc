#include "sim/cc_params.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/tunable_ranges.h"

namespace weft::sim {
namespace {

// fabric-facts §4: "2–4" µs; the firmware versions differ, so tunable_ranges has no default.
constexpr uint32_t kAssumedNpMinTimeBetweenCnpsUs = 4;
// rp_byte_reset = 0 turns the byte counter off: a counter too large to fire in any run.
constexpr double kByteCounterOffBytes = 1e12;
// The shortest τ and τ′ the twin runs: one cut per µs at most.
constexpr double kMinIntervalUs = 1;

absl::Status CheckFabricRange(const char* name, double value, double low, double high) {
  if (std::isfinite(value) && value > low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(name, " = ", value, " is out of range: accepted (", low, ", ", high, "]"));
}

uint32_t Get(const weft::v1::DcqcnParams& cc, const char* name) {
  uint32_t value = 0;
  GetDcqcnParam(cc, name, &value);
  return value;
}

}  // namespace

FabricSide HpccFabricSide(double link_bps) {
  FabricSide side;
  const double per_25g = link_bps / 25e9;
  side.link_bps = link_bps;
  side.kmin_bytes = 100e3 * per_25g;
  side.kmax_bytes = 400e3 * per_25g;
  side.pmax = 0.2;
  return side;
}

absl::StatusOr<MappedCcParams> MapCcParams(const weft::v1::DcqcnParams& cc,
                                           const FabricSide& fabric) {
  // Scalars only: the priority lists do not reach a single-class model (and MergeFrom
  // would append them to the defaults').
  weft::v1::DcqcnParams full = DefaultDcqcnParams();
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    if (uint32_t value = 0; GetDcqcnParam(cc, range.name, &value)) {
      SetDcqcnParam(range.name, value, &full);
    }
  }
  if (!full.has_np_min_time_between_cnps()) {
    full.set_np_min_time_between_cnps(kAssumedNpMinTimeBetweenCnpsUs);
  }
  const std::vector<weft::v1::ParameterError> errors = ValidateDcqcnParams(full);
  if (!errors.empty()) return absl::InvalidArgumentError(FormatParameterError(errors.front()));
  if (Get(full, "rp_gd") != 11) {
    return absl::InvalidArgumentError(
        absl::StrCat("rp_gd = ", Get(full, "rp_gd"),
                     ": the fluid model cuts by α/2 only: accepted 11 (of the NIC's 0..15)"));
  }
  if (absl::Status s = CheckFabricRange("link_bps", fabric.link_bps, 0, kMaxLineRateMbps * 1e6);
      !s.ok()) {
    return s;
  }

  MappedCcParams out;
  DcqcnParams& p = out.params;
  p.capacity_bps = fabric.link_bps;
  p.kmin_bytes = fabric.kmin_bytes;
  p.kmax_bytes = fabric.kmax_bytes;
  p.pmax = fabric.pmax;
  p.above_kmax = fabric.above_kmax;
  p.feedback_delay_us = fabric.feedback_delay_us;
  p.packet_bytes = fabric.packet_bytes;

  p.g = (1024.0 - Get(full, "rp_dce_tcp_g")) / 1024.0;
  p.tau_prime_us = std::max<double>(Get(full, "rp_dce_tcp_rtt"), kMinIntervalUs);
  p.tau_us = std::max<double>({static_cast<double>(Get(full, "np_min_time_between_cnps")),
                               static_cast<double>(Get(full, "rp_rate_reduce_monitor_period")),
                               kMinIntervalUs});
  p.timer_us = Get(full, "rp_time_reset");
  const uint32_t byte_reset = Get(full, "rp_byte_reset");
  p.byte_counter_bytes = byte_reset == 0 ? kByteCounterOffBytes : byte_reset;
  p.fast_recovery_steps = static_cast<int>(Get(full, "rp_threshold"));
  p.rate_ai_bps = Get(full, "rp_ai_rate") * 1e6;
  out.initial_alpha = Get(full, "rp_initial_alpha_value") / 1024.0;
  p.max_cut_fraction = 1 - Get(full, "rp_min_dec_fac") / 100.0;
  p.rate_hai_bps = Get(full, "rp_hai_rate") * 1e6;
  p.target_clamp = Get(full, "rp_clamp_tgt_rate") == 1 ? TargetClamp::kEveryCut
                   : Get(full, "rp_clamp_tgt_rate_ati") == 1 ? TargetClamp::kAfterTimerIncrease
                                                             : TargetClamp::kNever;
  if (absl::Status s = ValidateParams(p); !s.ok()) return s;

  const weft::v1::DcqcnParams defaults = DefaultDcqcnParams();
  for (const char* name : {"rp_min_rate", "rp_max_rate", "rp_rate_to_set_on_first_cnp"}) {
    if (Get(full, name) != Get(defaults, name)) {
      out.not_modelled.push_back(absl::StrCat(name, " = ", Get(full, name), ": ignored"));
    }
  }
  return out;
}

double ModelStepUs(const DcqcnParams& params) {
  return std::min({1.0, params.tau_us / 5, params.tau_prime_us / 5});
}

weft::v1::DcqcnParams FirmwareDefaultCcParams() {
  weft::v1::DcqcnParams cc = DefaultDcqcnParams();
  cc.set_np_min_time_between_cnps(kAssumedNpMinTimeBetweenCnpsUs);
  return cc;
}

weft::v1::DcqcnParams PaperCcParams() {
  weft::v1::DcqcnParams cc = FirmwareDefaultCcParams();
  cc.set_rp_dce_tcp_g(1020);
  cc.set_rp_dce_tcp_rtt(55);
  cc.set_np_min_time_between_cnps(50);
  cc.set_rp_time_reset(55);
  cc.set_rp_byte_reset(0);
  cc.set_rp_threshold(5);
  cc.set_rp_ai_rate(40);
  cc.set_rp_initial_alpha_value(1023);
  cc.set_rp_clamp_tgt_rate(1);
  return cc;
}

weft::v1::DcqcnParams BarreCcParams() {
  weft::v1::DcqcnParams cc = FirmwareDefaultCcParams();
  cc.set_np_min_time_between_cnps(1);
  cc.set_rp_min_dec_fac(90);
  cc.set_rp_rate_reduce_monitor_period(2);
  cc.set_rp_ai_rate(10);
  cc.set_rp_time_reset(50);
  return cc;
}

std::vector<CcPreset> CcPresets() {
  return {{"firmware defaults", FirmwareDefaultCcParams()},
          {"paper (CoNEXT'16)", PaperCcParams()},
          {"Barre (hand-tuned)", BarreCcParams()}};
}

}  // namespace weft::sim
