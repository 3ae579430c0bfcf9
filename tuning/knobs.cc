#include "tuning/knobs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/tunable_ranges.h"

namespace weft::tuning {
namespace {

double ToUnit(const Knob& k, double value) {
  value = std::clamp(value, static_cast<double>(k.low), static_cast<double>(k.high));
  if (k.high == k.low) return 0;
  if (k.log_scale) {
    return (std::log1p(value) - std::log1p(k.low)) / (std::log1p(k.high) - std::log1p(k.low));
  }
  return (value - k.low) / (k.high - k.low);
}

uint32_t FromUnit(const Knob& k, double u) {
  u = std::isfinite(u) ? std::clamp(u, 0.0, 1.0) : 0.0;
  const double value =
      k.log_scale ? std::expm1(std::log1p(k.low) + u * (std::log1p(k.high) - std::log1p(k.low)))
                  : k.low + u * (k.high - k.low);
  return static_cast<uint32_t>(
      std::clamp(std::llround(value), static_cast<long long>(k.low), static_cast<long long>(k.high)));
}

}  // namespace

const std::vector<Knob>& SearchKnobs() {
  // Bounds: Barre's Table 2 and the paper's values inside, firmware defaults inside,
  // and nothing a NIC would not take (common/tunable_ranges.h; knobs_test checks).
  static const std::vector<Knob>* const knobs = new std::vector<Knob>{
      {"np_min_time_between_cnps", 0, 64, true},
      {"rp_rate_reduce_monitor_period", 1, 64, true},
      {"rp_min_dec_fac", 0, 99, false},
      {"rp_ai_rate", 1, 400, true},
      {"rp_time_reset", 5, 1000, true},
      {"rp_byte_reset", 0, 32767, true},
      {"rp_threshold", 1, 8, false},
      {"rp_dce_tcp_g", 960, 1023, false},
      {"rp_dce_tcp_rtt", 1, 128, true},
      {"rp_initial_alpha_value", 64, 1023, false},
      {"rp_clamp_tgt_rate", 0, 1, false},
      {"rp_clamp_tgt_rate_ati", 0, 1, false},
  };
  return *knobs;
}

weft::v1::DcqcnParams DecodeProfile(const std::vector<double>& point) {
  weft::v1::DcqcnParams profile;
  const std::vector<Knob>& knobs = SearchKnobs();
  for (size_t i = 0; i < knobs.size(); ++i) {
    SetDcqcnParam(knobs[i].name, FromUnit(knobs[i], i < point.size() ? point[i] : 0), &profile);
  }
  return profile;
}

std::vector<double> EncodeProfile(const weft::v1::DcqcnParams& profile) {
  weft::v1::DcqcnParams defaults = DefaultDcqcnParams();
  std::vector<double> point;
  for (const Knob& k : SearchKnobs()) {
    uint32_t value = 0;
    if (!GetDcqcnParam(profile, k.name, &value) && !GetDcqcnParam(defaults, k.name, &value)) {
      // np_min_time_between_cnps has no firmware-wide default; sim/cc_params.h takes 4 µs.
      value = std::strcmp(k.name, "np_min_time_between_cnps") == 0 ? 4 : k.low;
    }
    point.push_back(ToUnit(k, value));
  }
  return point;
}

}  // namespace weft::tuning
