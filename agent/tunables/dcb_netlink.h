// DCB netlink messages (include/uapi/linux/dcbnl.h over rtnetlink), encoded and parsed
// apart from any socket so tests compare them byte for byte with the kernel's struct
// layouts. IEEE 802.1Qaz only: DCB_CMD_IEEE_GET / _SET / _DEL with the nested
// DCB_ATTR_IEEE attributes ETS (struct ieee_ets), PFC (struct ieee_pfc) and APP_TABLE
// (DCB_ATTR_IEEE_APP entries of struct dcb_app). Requests carry no NLM_F_ACK: the kernel
// answers a GET or SET with an RTM_GETDCB/RTM_SETDCB message, and any failure of the
// request itself (no such netdev, a driver without dcbnl ops, no CAP_NET_ADMIN) with
// NLMSG_ERROR. Attribute nesting follows iproute2's `dcb` tool (no NLA_F_NESTED).
// Pure functions; thread-safe.
#ifndef WEFT_AGENT_TUNABLES_DCB_NETLINK_H_
#define WEFT_AGENT_TUNABLES_DCB_NETLINK_H_

#include <linux/dcbnl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::agent {

// What DCB_CMD_IEEE_GET reports for one netdev. A driver leaves out what it lacks.
struct DcbIeeeState {
  bool has_ets = false;
  ieee_ets ets{};
  bool has_pfc = false;
  ieee_pfc pfc{};
  std::vector<dcb_app> apps;  // every APP entry (all selectors)
};

std::string EncodeIeeeGet(absl::string_view ifname, uint32_t seq);
std::string EncodeIeeeSetEts(absl::string_view ifname, const ieee_ets& ets, uint32_t seq);
std::string EncodeIeeeSetPfc(absl::string_view ifname, const ieee_pfc& pfc, uint32_t seq);
// Adds APP entries (DCB_CMD_IEEE_SET) / removes them (DCB_CMD_IEEE_DEL).
std::string EncodeIeeeSetApps(absl::string_view ifname, const std::vector<dcb_app>& apps,
                              uint32_t seq);
std::string EncodeIeeeDelApps(absl::string_view ifname, const std::vector<dcb_app>& apps,
                              uint32_t seq);

// The reply to EncodeIeeeGet with sequence `seq`. A kernel refusal (NLMSG_ERROR)
// becomes a status with strerror and, for EOPNOTSUPP, the hint that the netdev's driver
// has no DCB support; malformed replies are INTERNAL naming what was wrong.
absl::StatusOr<DcbIeeeState> ParseIeeeGetReply(absl::string_view reply, uint32_t seq);
// The reply to a SET or DEL: OK, a NLMSG_ERROR refusal, or the driver's error carried
// in the DCB_ATTR_IEEE status byte (e.g. mlx5 refusing ETS shares that do not sum to 100).
absl::Status ParseIeeeSetReply(absl::string_view reply, uint32_t seq);

// Status for a negative errno from the kernel, naming the request.
absl::Status DcbErrnoStatus(int error, absl::string_view what);

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_DCB_NETLINK_H_
