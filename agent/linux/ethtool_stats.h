// Netdev statistics as `ethtool -S` shows them, read through the SIOCETHTOOL ioctl:
// ETHTOOL_GSSET_INFO (how many ETH_SS_STATS strings), ETHTOOL_GSTRINGS (their names),
// ETHTOOL_GSTATS (the u64 values, same order). On mlx5 this is where the per-priority
// PFC counters (rx_prio3_pause, rx_prio3_pause_duration, ...) and the pause-storm events
// live (shared/docs/roce-facts.md §1).
//
// EthtoolReader is the seam the Linux NIC backend reads through; IoctlEthtoolReader is
// the real one (any thread; each call opens its own socket in the caller's network
// namespace). Tests of the backend pass a fake.
#ifndef WEFT_AGENT_LINUX_ETHTOOL_STATS_H_
#define WEFT_AGENT_LINUX_ETHTOOL_STATS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

using EthtoolStats = std::vector<std::pair<std::string, uint64_t>>;

class EthtoolReader {
 public:
  virtual ~EthtoolReader() = default;
  // The statistics of `ifname` in driver order. NOT_FOUND when there is no such
  // interface; UNIMPLEMENTED when its driver has no statistics; INTERNAL/UNAVAILABLE
  // with the ioctl and strerror otherwise.
  virtual absl::StatusOr<EthtoolStats> ReadStats(absl::string_view ifname) = 0;
};

class IoctlEthtoolReader : public EthtoolReader {
 public:
  absl::StatusOr<EthtoolStats> ReadStats(absl::string_view ifname) override;
};

// Splits a ETHTOOL_GSTRINGS buffer (`count` names of ETH_GSTRING_LEN = 32 bytes, each
// NUL-padded) into names. INVALID_ARGUMENT if the buffer is shorter than count × 32 or a
// name is empty or not NUL-terminated within its 32 bytes.
absl::StatusOr<std::vector<std::string>> ParseEthtoolStringTable(absl::string_view data,
                                                                 uint32_t count);

}  // namespace weft

#endif  // WEFT_AGENT_LINUX_ETHTOOL_STATS_H_
