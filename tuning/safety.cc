#include "tuning/safety.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/tunable_ranges.h"
#include "policy/policy.h"

namespace weft::tuning {
namespace {

bool Contains(const google::protobuf::RepeatedField<uint32_t>& list, uint32_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The name a profile under check takes inside a copy of the policy.
constexpr char kProfileUnderCheck[] = "tuning-safety-check";

}  // namespace

const char* SafetyRuleName(SafetyRule rule) {
  switch (rule) {
    case SafetyRule::kCongestionControlOnLossless:
      return "congestion control on for every lossless priority";
    case SafetyRule::kCnpPriorityNotLossless:
      return "CNPs on a priority that is not lossless or is strict";
    case SafetyRule::kPfcOnRocePriority:
      return "PFC on the RoCE priority unless RoCE is lossy";
    case SafetyRule::kValuesInRange:
      return "every value in its range";
  }
  return "unknown rule";
}

std::vector<SafetyViolation> CheckNodeSafety(const weft::v1::NodeQos& qos,
                                             const weft::v1::DcqcnParams& dcqcn,
                                             uint32_t roce_priority, bool lossy_roce) {
  std::vector<SafetyViolation> out;
  for (uint32_t p : qos.pfc_priorities()) {
    for (const auto& [list, name] :
         {std::pair{&dcqcn.rp_enabled_priorities(), "rp_enabled_priorities"},
          std::pair{&dcqcn.np_enabled_priorities(), "np_enabled_priorities"}}) {
      // Empty leaves the NIC as it is: nothing says DCQCN is on.
      if (!Contains(*list, p)) {
        out.push_back({SafetyRule::kCongestionControlOnLossless,
                       absl::StrCat(name, " = [", absl::StrJoin(*list, ","),
                                    "] leaves out lossless priority ", p)});
      }
    }
  }
  if (uint32_t fac = 0; !qos.pfc_priorities().empty() &&
                        GetDcqcnParam(dcqcn, "rp_min_dec_fac", &fac) && fac >= 100) {
    out.push_back({SafetyRule::kCongestionControlOnLossless,
                   absl::StrCat("rp_min_dec_fac = ", fac,
                                " never cuts the rate: congestion control off in effect; "
                                "accepted 0..99")});
  }
  if (uint32_t cnp = 0; GetDcqcnParam(dcqcn, "np_cnp_prio", &cnp) &&
                        Contains(qos.pfc_priorities(), cnp)) {
    const bool strict = cnp < static_cast<uint32_t>(qos.priority_to_tc_size()) &&
                        qos.priority_to_tc(cnp) < static_cast<uint32_t>(qos.tc_tsa_size()) &&
                        qos.tc_tsa(qos.priority_to_tc(cnp)) == weft::v1::TSA_STRICT;
    if (!strict) {
      out.push_back({SafetyRule::kCnpPriorityNotLossless,
                     absl::StrCat("np_cnp_prio = ", cnp,
                                  " is lossless and its traffic class is not strict")});
    }
  }
  if (!lossy_roce && !Contains(qos.pfc_priorities(), roce_priority)) {
    out.push_back({SafetyRule::kPfcOnRocePriority,
                   absl::StrCat("pfc_priorities = [", absl::StrJoin(qos.pfc_priorities(), ","),
                                "] leaves out the RoCE priority ", roce_priority)});
  }
  std::vector<weft::v1::ParameterError> errors = ValidateDcqcnParams(dcqcn);
  for (const weft::v1::ParameterError& e : ValidateNodeQos(qos)) errors.push_back(e);
  for (const weft::v1::ParameterError& e : errors) {
    out.push_back({SafetyRule::kValuesInRange, FormatParameterError(e)});
  }
  return out;
}

std::vector<SafetyViolation> CheckProfileSafety(const weft::v1::Policy& policy,
                                                const weft::v1::DcqcnParams& profile) {
  weft::v1::Policy with_profile = policy;
  weft::v1::DcqcnProfile* added = with_profile.mutable_dcqcn()->add_profiles();
  added->set_name(kProfileUnderCheck);
  *added->mutable_params() = profile;
  uint32_t roce_priority = 0;
  bool lossy_roce = false, has_roce = false;
  for (const weft::v1::QosClassPolicy& c : policy.qos().classes()) {
    if (!c.roce()) continue;
    has_roce = true;
    roce_priority = c.priority();
    lossy_roce = !c.lossless();
  }
  std::vector<SafetyViolation> out =
      CheckNodeSafety(weft::policy::CompileNodeQos(policy.qos()),
                      weft::policy::CompileDcqcn(with_profile, kProfileUnderCheck), roce_priority,
                      lossy_roce);
  if (!has_roce) {
    out.push_back({SafetyRule::kPfcOnRocePriority, "the policy has no RoCE class"});
  }
  return out;
}

std::string FormatViolations(const std::vector<SafetyViolation>& violations) {
  return absl::StrJoin(violations, "; ", [](std::string* out, const SafetyViolation& v) {
    absl::StrAppend(out, SafetyRuleName(v.rule), ": ", v.message);
  });
}

}  // namespace weft::tuning
