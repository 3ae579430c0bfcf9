// How a RoCE host names its counters, and how each lands in RawNicCounters: the one
// mapping every backend that reads counters by their host names shares (the Linux
// backend from sysfs files and ethtool, the fabric backend from the twin's maps of the
// same names), so both apply the same units (port_*_data × 4) and the same rule for
// what a port is expected to have (missing_counters). Widths stay as the host gives
// them: the 32-bit Q-counters pass through raw and agent/counter_math.h handles wraps.
// Names and groups: shared/docs/roce-facts.md §1.
//
// Pure data and functions; thread-safe.
#ifndef WEFT_AGENT_HOST_COUNTERS_H_
#define WEFT_AGENT_HOST_COUNTERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "agent/nic_backend.h"

namespace weft::agent {

// Which directory a counter lives in and when a port is expected to have it (a counter
// the port is expected to have and lacks is listed in missing_counters).
enum class CounterGroup {
  kPort,            // ports/<p>/counters/ (or counters_ext/): every port
  kCongestion,      // hw_counters/, RoCE (Ethernet) ports
  kRetransmission,  // hw_counters/, every port with a hw_counters/ directory
  kOptional,        // hw_counters/ optional counters: off unless enabled; never missing
};

struct HostCounterSpec {
  const char* file;  // the sysfs file name, as missing_counters says it
  RawNicCounters::Value RawNicCounters::*field;
  CounterGroup group;
  // mlx4's counters_ext/ file holding the same quantity in 64 bits; it wins over
  // counters/, which then holds the 32-bit PMA value that saturates.
  const char* ext_file = nullptr;
  bool four_octet_words = false;  // port_*_data count 4-octet words
};

// Every counter RawNicCounters has a field for, port counters first.
absl::Span<const HostCounterSpec> HostCounterSpecs();

// A switchdev representor's hardware counters carry this prefix ("vport_rp_cnp_handled").
inline constexpr absl::string_view kVportPrefix = "vport_";

// Whether a port is expected to have `spec`: a port counter always, a retransmission
// Q-counter when the port has hw_counters/, a congestion counter when it also is RoCE,
// an optional counter never.
bool ExpectedOnPort(const HostCounterSpec& spec, bool has_hw_counters, bool is_roce);

// Stores the host's value of `spec` in its field, in the field's unit (bytes for the
// 4-octet-word data counters).
void SetHostCounter(const HostCounterSpec& spec, uint64_t host_value, RawNicCounters* counters);

// A link_layer of "Ethernet" (or none reported, as a RoCE-only driver may) is RoCE.
bool IsRoceLinkLayer(absl::string_view link_layer);

// Records one ethtool -S statistic in `by_priority` when it is a per-priority PFC
// counter (rx/tx_prio{p}_pause, rx/tx_prio{p}_pause_duration); ignores the rest.
void AddPfcStatistic(absl::string_view name, uint64_t value,
                     std::map<uint32_t, RawPfcCounters>* by_priority);

// The per-priority PFC counters among `stats` (name/value pairs: a vector of pairs or a
// map), ascending by priority. A priority is reported when its pause counters exist,
// which on mlx5 is while PFC is enabled on it.
template <typename NamedValues>
std::vector<RawPfcCounters> PfcFromEthtool(const NamedValues& stats) {
  std::map<uint32_t, RawPfcCounters> by_priority;
  for (const auto& stat : stats) AddPfcStatistic(stat.first, stat.second, &by_priority);
  std::vector<RawPfcCounters> out;
  for (const auto& entry : by_priority) out.push_back(entry.second);
  return out;
}

}  // namespace weft::agent

#endif  // WEFT_AGENT_HOST_COUNTERS_H_
