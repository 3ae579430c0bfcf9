// The agent's flat view of a NIC's QoS and DCQCN tunables: named parameters with a
// canonical text value, so applying, reading back, drift checks, ACK read-backs
// (ParameterValue), NACKs (ParameterError) and `weft-agent inspect` all compare and
// print the same strings.
//
// Parameters and their canonical values:
//   ets                 "prio_tc 0,0,0,3,0,0,6,0 tsa ets,strict,... bw 50,0,0,50,0,0,0,0"
//                       (NodeQos priority_to_tc, tc_tsa, tc_bandwidth_percent: one IEEE ETS
//                       object, written at once because a half-written one can be invalid)
//   pfc_priorities      "3" / "3,4" / "none"
//   dscp_to_priority    "0:0,26:3,48:6" (sorted by DSCP) / "none"
//   trust               "dscp" / "pcp" (derived from the DSCP APP entries on mlx5)
//   default_roce_tos    "106"
//   rp_* / np_*         decimal (the DcqcnParams scalars, mlx5 cc_params names)
//   rp_enabled_priorities, np_enabled_priorities   "0,1,2,3,4,5,6,7" / "none"
// Pure functions; thread-safe.
#ifndef WEFT_AGENT_TUNABLES_TUNABLE_PARAMS_H_
#define WEFT_AGENT_TUNABLES_TUNABLE_PARAMS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/desired_state.pb.h"

namespace weft::agent {

inline constexpr char kEtsParam[] = "ets";
inline constexpr char kPfcParam[] = "pfc_priorities";
inline constexpr char kDscpMapParam[] = "dscp_to_priority";
inline constexpr char kTrustParam[] = "trust";
inline constexpr char kRoceTosParam[] = "default_roce_tos";
inline constexpr char kRpEnabledParam[] = "rp_enabled_priorities";
inline constexpr char kNpEnabledParam[] = "np_enabled_priorities";

struct ParamValue {
  std::string parameter;
  std::string value;
  bool operator==(const ParamValue& other) const {
    return parameter == other.parameter && value == other.value;
  }
};

// Parameter name -> canonical value.
using ParamMap = std::map<std::string, std::string>;

// The parameters `state` sets, in the order the agent writes them: DCB (ETS, PFC, the
// DSCP table, then trust, which the table implies), the RoCE ToS, DCQCN scalars
// (np_cnp_prio before np_cnp_prio_mode, since writing the former resets the latter),
// then the per-priority DCQCN switches. `state` must be valid (tunable_ranges).
std::vector<ParamValue> DesiredParameters(const weft::v1::DesiredState& state);

// Every parameter name the agent knows, in write order (for inspect columns).
const std::vector<std::string>& AllParameterNames();

// Canonical forms.
std::string FormatPriorityList(const std::vector<uint32_t>& priorities);  // sorted
absl::StatusOr<std::vector<uint32_t>> ParsePriorityList(absl::string_view text);
std::string FormatDscpMap(const std::map<uint32_t, uint32_t>& dscp_to_priority);
absl::StatusOr<std::map<uint32_t, uint32_t>> ParseDscpMap(absl::string_view text);

// One IEEE ETS configuration as the agent handles it.
struct EtsConfig {
  uint32_t prio_tc[8] = {};
  uint32_t tsa[8] = {};  // IEEE_8021QAZ_TSA_* (0 strict, 1 cbs, 2 ets, 255 vendor)
  uint32_t bw[8] = {};
};
std::string FormatEts(const EtsConfig& ets);
absl::StatusOr<EtsConfig> ParseEts(absl::string_view text);

// Fills the QoS and DCQCN messages from a NIC's parameters (unknown or absent
// parameters stay unset), for `weft-agent inspect --output json`.
void ParamsToProto(const ParamMap& params, weft::v1::NodeQos* qos, weft::v1::DcqcnParams* dcqcn);

}  // namespace weft::agent

#endif  // WEFT_AGENT_TUNABLES_TUNABLE_PARAMS_H_
