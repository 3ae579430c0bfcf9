// Counter math: the one place where the agent turns two cumulative NIC readings into
// per-second rates and increments. The agent loop calls ComputeNicUpdate once per NIC
// per interval, with the NIC's previous good reading; the result's sample goes into a
// TelemetryBatch and its increments feed the /metrics counters.
//
// Rules:
//  - Rates are increments divided by the time between the two readings' timestamps.
//  - 32-bit counters (the mlx5 Q-counters: out_of_sequence, packet_seq_err,
//    local_ack_timeout_err, rnr_nak_retry_err, implied_nak_seq_err, duplicate_request,
//    out_of_buffer) wrap at 2^32: a value below the previous one is a wrap when the
//    wrapped increment is under 2^31, otherwise a reset.
//  - 64-bit counters never wrap in practice; a value below the previous one is a reset
//    (driver reload, NIC reset, counters cleared).
//  - Any reset, a first reading, or a timestamp that did not move forward makes the
//    whole sample's rates invalid: rates_valid=false, every per_second 0, no
//    increments. A rate is never negative and never made up from a reset.
//
// Pure functions over plain values: thread-safe.
#ifndef WEFT_AGENT_COUNTER_MATH_H_
#define WEFT_AGENT_COUNTER_MATH_H_

#include <cstdint>
#include <optional>

#include "agent/nic_backend.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::agent {

enum class CounterWidth { k32Bits, k64Bits };

// The increase of a cumulative counter of `width` from `previous` to `current`;
// nullopt when the counter was reset. For a 32-bit counter, values above 2^32-1 mean
// the counter is wider than declared, and only a forward move counts.
//
// Example: CounterIncrease(0xFFFFFF00, 0x10, CounterWidth::k32Bits) == 0x110.
std::optional<uint64_t> CounterIncrease(uint64_t previous, uint64_t current, CounterWidth width);

struct NicUpdate {
  // Totals from the current reading; per_second and rates_valid as described above;
  // only `device`, `port`, `timestamp_us`, `port_state` and `error` when the reading
  // failed.
  weft::v1::NicSample sample;
  // Per-counter increase since the previous reading, in the totals' units; set exactly
  // when sample.rates_valid(). A counter has an increase when both readings have it;
  // PFC entries exist for priorities present in both readings.
  std::optional<RawNicCounters> increase;
};

// Builds the sample of `current`. `previous` is the NIC's last reading without an
// error, or nullptr when there is none (first reading): then rates_valid is false.
// A previous reading of another device/port counts as none. A counter absent from
// `current` is unset in the sample; one (or a PFC priority) that has just appeared gets
// per_second 0 without invalidating the rest of the sample.
NicUpdate ComputeNicUpdate(const RawNicReading* previous, const RawNicReading& current);

}  // namespace weft::agent

#endif  // WEFT_AGENT_COUNTER_MATH_H_
