// The safety rules every profile the tuner proposes must pass (issue 21), as one function
// a test can enumerate: a violation names its rule, and the tuner refuses to output a
// profile with any (tuning/proposal.h). The rules, on the node state the policy compiles
// (policy/policy.h: its NodeQos, and the profile overlaid on the firmware defaults):
//   kCongestionControlOnLossless  DCQCN stays on (reaction and notification point) for
//       every lossless priority, and it can act: rp_min_dec_fac = 100 ("never cut") turns
//       the reaction point's cuts off while the priority bits say on.
//   kCnpPriorityNotLossless       the CNPs' priority (np_cnp_prio) is not lossless, or its
//       traffic class is strict (CNPs then never wait behind paused data).
//   kPfcOnRocePriority            PFC stays on the RoCE class's priority unless the policy
//       says RoCE is lossy (the RoCE class not lossless).
//   kValuesInRange                every DCQCN and QoS value is inside its range
//       (common/tunable_ranges.h ValidateDcqcnParams, ValidateNodeQos).
// Pure functions; thread-safe.
#ifndef WEFT_TUNING_SAFETY_H_
#define WEFT_TUNING_SAFETY_H_

#include <string>
#include <vector>

#include "proto/weft/v1/desired_state.pb.h"
#include "proto/weft/v1/policy.pb.h"

namespace weft::tuning {

enum class SafetyRule {
  kCongestionControlOnLossless,
  kCnpPriorityNotLossless,
  kPfcOnRocePriority,
  kValuesInRange,
};
inline constexpr SafetyRule kAllSafetyRules[] = {
    SafetyRule::kCongestionControlOnLossless, SafetyRule::kCnpPriorityNotLossless,
    SafetyRule::kPfcOnRocePriority, SafetyRule::kValuesInRange};
const char* SafetyRuleName(SafetyRule rule);

struct SafetyViolation {
  SafetyRule rule;
  std::string message;  // names the priority or parameter and the value
};

// The checks on a compiled node state. `roce_priority` is the RoCE class's priority and
// `lossy_roce` whether the policy makes RoCE lossy. Empty means safe.
std::vector<SafetyViolation> CheckNodeSafety(const weft::v1::NodeQos& qos,
                                             const weft::v1::DcqcnParams& dcqcn,
                                             uint32_t roce_priority, bool lossy_roce);

// The checks on `profile` as `policy` would compile it for a node (its QoS section, the
// firmware defaults overlaid with the profile, the CNP class's DSCP and priority).
std::vector<SafetyViolation> CheckProfileSafety(const weft::v1::Policy& policy,
                                                const weft::v1::DcqcnParams& profile);

// "kPfcOnRocePriority: ..." one line per violation, for errors and logs.
std::string FormatViolations(const std::vector<SafetyViolation>& violations);

}  // namespace weft::tuning

#endif  // WEFT_TUNING_SAFETY_H_
