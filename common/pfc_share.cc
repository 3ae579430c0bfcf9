#include "common/pfc_share.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace weft {

double PauseShare(double pause_us_per_s) {
  constexpr double kMicrosPerSecond = 1e6;
  return std::clamp(pause_us_per_s / kMicrosPerSecond, 0.0, 1.0);
}

PfcPauseShares PauseSharesOf(const weft::v1::NicSample& sample) {
  PfcPauseShares shares;
  for (const weft::v1::PriorityPfcCounters& pfc : sample.pfc()) {
    const double rx = PauseShare(pfc.rx_pause_duration_us().per_second());
    const double tx = PauseShare(pfc.tx_pause_duration_us().per_second());
    if (!shares.has_pfc || rx > shares.rx) {
      shares.rx = rx;
      shares.rx_priority = pfc.priority();
    }
    if (!shares.has_pfc || tx > shares.tx) {
      shares.tx = tx;
      shares.tx_priority = pfc.priority();
    }
    shares.has_pfc = true;
  }
  return shares;
}

std::string FormatShare(double share) { return absl::StrFormat("%.1f%%", share * 100); }

}  // namespace weft
