// The accepted range of every QoS and DCQCN tunable in a weft.v1.DesiredState, the
// firmware defaults of the DCQCN parameters, and one validator used on both ends of the
// wire: the controller checks a policy before it builds desired state, the agent checks
// every DesiredState again before touching a NIC (it never trusts the wire).
//
// Sources (see /work/shared/docs/roce-facts.md §2-§3): NVIDIA DOCA "DCQCN CC parameters"
// for the DCQCN units, ranges and defaults; include/uapi/linux/dcbnl.h and mlx5's
// en_dcbnl.c for the DCB rules (ETS shares of ETS traffic classes sum to 100, 8
// priorities and traffic classes, DSCP 0..63); rdma_cm configfs for default_roce_tos.
//
// Meaning of an unset field (what the agent leaves alone):
//  - DcqcnParams: an unset optional scalar is left as the NIC has it; an empty
//    rp_enabled_priorities / np_enabled_priorities list is left as the NIC has it,
//    a non-empty one is the complete set of priorities with DCQCN on.
//  - NodeQos DCB part (trust, dscp_to_priority, pfc_priorities, priority_to_tc,
//    tc_bandwidth_percent, tc_tsa): absent when all of them are unset/empty; otherwise it
//    is the complete DCB state and must be complete: trust set, 8 entries in each
//    per-priority/per-TC list, pfc_priorities the full set of lossless priorities (empty:
//    PFC off everywhere), dscp_to_priority the full DSCP table (non-empty under DSCP trust,
//    empty under PCP trust, because on mlx5 the DSCP APP entries are the trust switch).
//  - NodeQos.default_roce_tos: unset is left alone.
//
// Pure functions over protos; thread-safe.
//
// Example:
//   for (const weft::v1::ParameterError& e : weft::ValidateDesiredState(state))
//     std::cerr << weft::FormatParameterError(e) << "\n";
#ifndef WEFT_COMMON_TUNABLE_RANGES_H_
#define WEFT_COMMON_TUNABLE_RANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/weft/v1/desired_state.pb.h"

namespace weft {

inline constexpr uint32_t kNumPriorities = 8;      // IEEE 802.1p priorities 0..7
inline constexpr uint32_t kNumTrafficClasses = 8;  // IEEE_8021QAZ_MAX_TCS
inline constexpr uint32_t kMaxDscp = 63;
inline constexpr uint32_t kMaxRoceTos = 255;
// "line rate" upper bound of the rate parameters: the fastest Ethernet port an mlx5 NIC
// has (800 GbE). The firmware itself rejects a rate above its own port speed.
inline constexpr uint32_t kMaxLineRateMbps = 800000;
// DCQCN CNPs go out on this DSCP unless np_cnp_dscp says otherwise (firmware default).
inline constexpr uint32_t kDefaultCnpDscp = 48;

// One scalar DCQCN parameter: a DcqcnParams field, named exactly as the mlx5 debugfs
// cc_params file.
struct DcqcnParamRange {
  const char* name;  // "rp_gd"
  uint32_t min;
  uint32_t max;
  bool has_firmware_default;  // false: the default differs between firmware versions
  uint32_t firmware_default;
  const char* unit;  // "µs", "Mb/s", ... for error messages and docs
};

// Every optional scalar field of DcqcnParams, in field-number order.
const std::vector<DcqcnParamRange>& DcqcnParamRanges();

// The range of the DCQCN parameter `name`, or nullptr when there is no such parameter.
const DcqcnParamRange* FindDcqcnParamRange(absl::string_view name);

// The ConnectX firmware defaults: every parameter with a known default set to it, and
// DCQCN enabled on all eight priorities for the reaction and notification points
// (ROCE_CC_PRIO_MASK = 0xff). np_cnp_prio_mode is left unset: writing np_cnp_prio
// forces it to 0 anyway.
weft::v1::DcqcnParams DefaultDcqcnParams();

// The common production QoS recipe (roce-facts.md §3): DSCP trust; DSCP 0 -> priority 0,
// RoCE DSCP 26 -> priority 3 with PFC, CNP DSCP 48 -> priority 6; priorities 3 and 6 on
// traffic classes 3 and 6, the rest on TC 0; TC 0 and TC 3 ETS 50% each, the others
// strict; default_roce_tos 106 (DSCP 26, ECT(0)).
weft::v1::NodeQos RecipeQos();

// Reads / writes one scalar DcqcnParams field by its cc_params name. Get returns false
// when the field is unset or unknown; Set returns false for an unknown name.
bool GetDcqcnParam(const weft::v1::DcqcnParams& params, absl::string_view name,
                   uint32_t* value);
bool SetDcqcnParam(absl::string_view name, uint32_t value, weft::v1::DcqcnParams* params);

// Range and consistency errors, each naming the parameter, the value and what would be
// accepted (`device` is left empty: the checks are node-wide). Empty means valid.
std::vector<weft::v1::ParameterError> ValidateDcqcnParams(const weft::v1::DcqcnParams& dcqcn);
std::vector<weft::v1::ParameterError> ValidateNodeQos(const weft::v1::NodeQos& qos);
// Both of the above plus the checks across them and the envelope (version >= 1):
// the CNP priority must not be lossless; the RoCE priority (DSCP of default_roce_tos
// mapped through dscp_to_priority) must have PFC on.
std::vector<weft::v1::ParameterError> ValidateDesiredState(const weft::v1::DesiredState& state);

// True when `qos` carries a DCB part (see the header comment).
bool HasDcbSettings(const weft::v1::NodeQos& qos);

// "mlx5_0: rp_gd = 16: out of range 0..15 (log2)" (device prefix only when set).
std::string FormatParameterError(const weft::v1::ParameterError& error);

}  // namespace weft

#endif  // WEFT_COMMON_TUNABLE_RANGES_H_
