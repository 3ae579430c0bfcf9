// PFC pause as a share of time, per direction: what an operator reads as "paused 40% of
// the time". From a NIC sample's per-second pause durations (ethtool
// {rx,tx}_prio{p}_pause_duration, µs per second): rx is the time the NIC was paused by
// its switch, tx the time it paused its switch. Each direction is judged on its own and
// on its most-paused priority, so a share is always between 0 and 1; rx and tx are never
// added (both paused all the time is 100% each, not 200%). The controller's health
// rules, node rates and rollout KPIs and weftctl's tables share this one definition.
// Pure functions: thread-safe.
#ifndef WEFT_COMMON_PFC_SHARE_H_
#define WEFT_COMMON_PFC_SHARE_H_

#include <cstdint>
#include <string>

#include "proto/weft/v1/telemetry.pb.h"

namespace weft {

// `pause_us_per_s` as a share of one second, clamped to 0..1 (two readings taken a
// little apart can count a few µs more pause than wall time).
double PauseShare(double pause_us_per_s);

struct PfcPauseShares {
  bool has_pfc = false;  // the sample reported at least one priority (PFC is on)
  double rx = 0;         // 0..1, the most rx-paused priority
  uint32_t rx_priority = 0;
  double tx = 0;         // 0..1, the most tx-paused priority
  uint32_t tx_priority = 0;

  // The more-paused direction: "rx" or "tx" (rx on a tie), its share and priority.
  const char* worst_direction() const { return tx > rx ? "tx" : "rx"; }
  double worst() const { return tx > rx ? tx : rx; }
  uint32_t worst_priority() const { return tx > rx ? tx_priority : rx_priority; }
};

// The shares of `sample`'s PFC priorities. Zero (has_pfc false) without priorities.
// Rates are taken as they are: the caller checks rates_valid and error.
PfcPauseShares PauseSharesOf(const weft::v1::NicSample& sample);

// "12.5%": a share as people read it, one decimal.
std::string FormatShare(double share);

}  // namespace weft

#endif  // WEFT_COMMON_PFC_SHARE_H_
