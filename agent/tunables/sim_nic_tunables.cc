#include "agent/tunables/sim_nic_tunables.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/tunable_ranges.h"

namespace weft::agent {
namespace {

uint8_t Mask(const std::string& list) {
  uint8_t mask = 0;
  absl::StatusOr<std::vector<uint32_t>> priorities = ParsePriorityList(list);
  if (!priorities.ok()) return 0;
  for (uint32_t p : *priorities) {
    if (p < 8) mask |= static_cast<uint8_t>(1u << p);
  }
  return mask;
}

}  // namespace

SimNicTunables::SimNicTunables(std::string device) : device_(std::move(device)) {
  weft::v1::DesiredState defaults;
  defaults.set_version(1);
  *defaults.mutable_dcqcn() = DefaultDcqcnParams();
  defaults.mutable_dcqcn()->set_np_min_time_between_cnps(0);
  defaults.mutable_dcqcn()->set_np_cnp_prio_mode(0);
  *defaults.mutable_qos() = RecipeQos();
  for (const ParamValue& p : DesiredParameters(defaults)) values_[p.parameter] = p.value;
  UpdateMasks();
}

SimNicTunables::SimNicTunables(std::string device, const weft::v1::NodeQos& qos,
                               const weft::v1::DcqcnParams& dcqcn)
    : SimNicTunables(std::move(device)) {
  weft::v1::DesiredState reported;
  *reported.mutable_qos() = qos;
  *reported.mutable_dcqcn() = dcqcn;
  for (const ParamValue& p : DesiredParameters(reported)) values_[p.parameter] = p.value;
  UpdateMasks();
}

std::vector<std::string> SimNicTunables::Parameters() const { return AllParameterNames(); }

absl::StatusOr<std::string> SimNicTunables::Read(absl::string_view parameter) {
  auto it = values_.find(std::string(parameter));
  if (it == values_.end()) {
    return absl::UnimplementedError(absl::StrCat("unknown parameter '", parameter, "'"));
  }
  return it->second;
}

absl::Status SimNicTunables::Check(absl::string_view parameter, absl::string_view value) const {
  if (values_.count(std::string(parameter)) == 0) {
    return absl::UnimplementedError(absl::StrCat("unknown parameter '", parameter, "'"));
  }
  if (const DcqcnParamRange* range = FindDcqcnParamRange(parameter)) {
    uint32_t number = 0;
    if (!absl::SimpleAtoi(value, &number) || number < range->min || number > range->max) {
      return absl::InvalidArgumentError(
          absl::StrCat("the firmware refused '", value, "' (", range->min, "..", range->max, ")"));
    }
  } else if (parameter == kEtsParam) {
    absl::StatusOr<EtsConfig> ets = ParseEts(value);
    if (!ets.ok()) return ets.status();
    uint32_t sum = 0;
    bool have_ets = false;
    for (int i = 0; i < 8; ++i) {
      if (ets->tsa[i] == 2) {
        have_ets = true;
        sum += ets->bw[i];
      }
    }
    if (have_ets && sum != 100) return absl::InvalidArgumentError("RTM_SETDCB: Invalid argument");
  } else if (parameter == kPfcParam || parameter == kRpEnabledParam || parameter == kNpEnabledParam) {
    if (!ParsePriorityList(value).ok()) return absl::InvalidArgumentError("not a priority list");
  } else if (parameter == kDscpMapParam) {
    if (!ParseDscpMap(value).ok()) return absl::InvalidArgumentError("not a DSCP map");
  }
  return absl::OkStatus();
}

absl::Status SimNicTunables::Write(absl::string_view parameter, absl::string_view value) {
  if (reject_writes_) {
    return absl::UnavailableError(
        "simulated fault reject_tunables: the firmware refused the command");
  }
  absl::Status ok = Check(parameter, value);
  if (!ok.ok()) return ok;
  if (before_write_) before_write_();
  if (parameter == kTrustParam) return absl::OkStatus();  // follows dscp_to_priority, as mlx5
  values_[std::string(parameter)] = std::string(value);
  if (parameter == kDscpMapParam) values_[kTrustParam] = value == "none" ? "pcp" : "dscp";
  if (parameter == "np_cnp_prio") values_["np_cnp_prio_mode"] = "0";
  UpdateMasks();
  return absl::OkStatus();
}

void SimNicTunables::UpdateMasks() {
  pfc_mask_ = Mask(values_[kPfcParam]);
  rp_mask_ = Mask(values_[kRpEnabledParam]);
  np_mask_ = Mask(values_[kNpEnabledParam]);
}

}  // namespace weft::agent
