#include "common/tunable_ranges.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace weft {
namespace {

using weft::v1::DcqcnParams;
using weft::v1::DesiredState;
using weft::v1::NodeQos;
using weft::v1::ParameterError;

constexpr uint32_t kU32Max = 0xffffffffu;

void AddError(std::vector<ParameterError>* errors, std::string parameter, std::string value,
              std::string reason) {
  ParameterError* error = &errors->emplace_back();
  error->set_parameter(std::move(parameter));
  error->set_value(std::move(value));
  error->set_reason(std::move(reason));
}

std::string JoinList(const google::protobuf::RepeatedField<uint32_t>& values) {
  return absl::StrCat("[", absl::StrJoin(values, ","), "]");
}

const google::protobuf::FieldDescriptor* ScalarField(absl::string_view name) {
  const google::protobuf::FieldDescriptor* field =
      DcqcnParams::descriptor()->FindFieldByName(std::string(name));
  if (field == nullptr || field->is_repeated() ||
      field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
    return nullptr;
  }
  return field;
}

// A list of distinct priorities 0..7.
void ValidatePriorityList(const google::protobuf::RepeatedField<uint32_t>& priorities,
                          const std::string& parameter, std::vector<ParameterError>* errors) {
  std::set<uint32_t> seen;
  for (uint32_t priority : priorities) {
    if (priority >= kNumPriorities) {
      AddError(errors, parameter, JoinList(priorities),
               absl::StrCat("priority ", priority, " out of range 0..", kNumPriorities - 1));
    } else if (!seen.insert(priority).second) {
      AddError(errors, parameter, JoinList(priorities),
               absl::StrCat("priority ", priority, " listed twice"));
    }
  }
}

bool ListContains(const google::protobuf::RepeatedField<uint32_t>& values, uint32_t value) {
  for (uint32_t v : values) {
    if (v == value) return true;
  }
  return false;
}

bool IsKnownTsa(int tsa) {
  return tsa == weft::v1::TSA_STRICT || tsa == weft::v1::TSA_CBS || tsa == weft::v1::TSA_ETS ||
         tsa == weft::v1::TSA_VENDOR;
}

void ValidateEts(const NodeQos& qos, std::vector<ParameterError>* errors) {
  for (int tc = 0; tc < qos.tc_tsa_size(); ++tc) {
    if (!IsKnownTsa(qos.tc_tsa(tc))) {
      AddError(errors, absl::StrCat("tc_tsa[", tc, "]"), absl::StrCat(qos.tc_tsa(tc)),
               "unknown transmission selection algorithm; accepted: 0 strict, 1 cbs, 2 ets, "
               "255 vendor");
    }
  }
  for (int tc = 0; tc < qos.tc_bandwidth_percent_size(); ++tc) {
    if (qos.tc_bandwidth_percent(tc) > 100) {
      AddError(errors, absl::StrCat("tc_bandwidth_percent[", tc, "]"),
               absl::StrCat(qos.tc_bandwidth_percent(tc)), "out of range 0..100 (%)");
    }
  }
  if (qos.tc_tsa_size() != static_cast<int>(kNumTrafficClasses) ||
      qos.tc_bandwidth_percent_size() != static_cast<int>(kNumTrafficClasses)) {
    return;  // the size errors are already reported
  }
  // mlx5e_dbcnl_validate_ets: the shares of the ETS traffic classes sum to 100.
  bool have_ets_tc = false;
  uint32_t ets_sum = 0;
  for (uint32_t tc = 0; tc < kNumTrafficClasses; ++tc) {
    if (qos.tc_tsa(tc) == weft::v1::TSA_ETS) {
      have_ets_tc = true;
      ets_sum += qos.tc_bandwidth_percent(tc);
    }
  }
  if (have_ets_tc && ets_sum != 100) {
    AddError(errors, "tc_bandwidth_percent", JoinList(qos.tc_bandwidth_percent()),
             absl::StrCat("the shares of the ETS traffic classes sum to ", ets_sum,
                          "; they must sum to 100"));
  }
}

// The 802.1p priority CNPs leave on, when the desired state determines it.
bool CnpPriority(const DesiredState& state, uint32_t* priority, std::string* how) {
  if (state.dcqcn().has_np_cnp_prio()) {
    *priority = state.dcqcn().np_cnp_prio();
    *how = absl::StrCat("np_cnp_prio=", *priority);
    return true;
  }
  if (state.qos().trust() != weft::v1::TRUST_MODE_DSCP) return false;
  uint32_t cnp_dscp =
      state.dcqcn().has_np_cnp_dscp() ? state.dcqcn().np_cnp_dscp() : kDefaultCnpDscp;
  auto it = state.qos().dscp_to_priority().find(cnp_dscp);
  if (it == state.qos().dscp_to_priority().end()) return false;
  *priority = it->second;
  *how = absl::StrCat("CNP DSCP ", cnp_dscp, " maps to it");
  return true;
}

}  // namespace

const std::vector<DcqcnParamRange>& DcqcnParamRanges() {
  static const auto* const kRanges = new std::vector<DcqcnParamRange>{
      {"rp_clamp_tgt_rate", 0, 1, true, 0, "boolean"},
      {"rp_clamp_tgt_rate_ati", 0, 1, true, 1, "boolean"},
      {"rp_time_reset", 1, 131071, true, 300, "µs"},
      {"rp_byte_reset", 0, 32767, true, 32767, "bytes, 0 = off"},
      {"rp_threshold", 1, 31, true, 1, "rate-increase events"},
      {"rp_ai_rate", 1, kMaxLineRateMbps, true, 5, "Mb/s"},
      {"rp_max_rate", 0, kMaxLineRateMbps, true, 0, "Mb/s, 0 = line rate"},
      {"rp_hai_rate", 1, kMaxLineRateMbps, true, 50, "Mb/s"},
      {"rp_min_dec_fac", 0, 100, true, 50, "%"},
      {"rp_min_rate", 1, kMaxLineRateMbps, true, 1, "Mb/s"},
      {"rp_rate_to_set_on_first_cnp", 0, kMaxLineRateMbps, true, 0, "Mb/s, 0 = port speed"},
      {"rp_dce_tcp_g", 0, 1023, true, 1019, "1/1024 fixed point"},
      {"rp_dce_tcp_rtt", 1, 131071, true, 1, "µs"},
      {"rp_rate_reduce_monitor_period", 1, kU32Max, true, 4, "µs"},
      {"rp_initial_alpha_value", 1, 1023, true, 1023, "1/1024 fixed point"},
      {"rp_gd", 0, 15, true, 11, "log2"},
      // 0..4 µs by default depending on the firmware; the field is a 17-bit µs timer.
      {"np_min_time_between_cnps", 0, 131071, false, 0, "µs"},
      {"np_cnp_dscp", 0, kMaxDscp, true, kDefaultCnpDscp, "DSCP"},
      {"np_cnp_prio_mode", 0, 1, false, 0, "0 = use np_cnp_prio"},
      {"np_cnp_prio", 0, kNumPriorities - 1, true, 6, "802.1p priority"},
  };
  return *kRanges;
}

const DcqcnParamRange* FindDcqcnParamRange(absl::string_view name) {
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    if (name == range.name) return &range;
  }
  return nullptr;
}

bool GetDcqcnParam(const DcqcnParams& params, absl::string_view name, uint32_t* value) {
  const google::protobuf::FieldDescriptor* field = ScalarField(name);
  if (field == nullptr) return false;
  const google::protobuf::Reflection* reflection = params.GetReflection();
  if (!reflection->HasField(params, field)) return false;
  *value = reflection->GetUInt32(params, field);
  return true;
}

bool SetDcqcnParam(absl::string_view name, uint32_t value, DcqcnParams* params) {
  const google::protobuf::FieldDescriptor* field = ScalarField(name);
  if (field == nullptr) return false;
  params->GetReflection()->SetUInt32(params, field, value);
  return true;
}

DcqcnParams DefaultDcqcnParams() {
  DcqcnParams params;
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    if (range.has_firmware_default) SetDcqcnParam(range.name, range.firmware_default, &params);
  }
  for (uint32_t priority = 0; priority < kNumPriorities; ++priority) {
    params.add_rp_enabled_priorities(priority);
    params.add_np_enabled_priorities(priority);
  }
  return params;
}

NodeQos RecipeQos() {
  NodeQos qos;
  qos.set_trust(weft::v1::TRUST_MODE_DSCP);
  (*qos.mutable_dscp_to_priority())[0] = 0;
  (*qos.mutable_dscp_to_priority())[26] = 3;
  (*qos.mutable_dscp_to_priority())[kDefaultCnpDscp] = 6;
  qos.add_pfc_priorities(3);
  for (uint32_t p = 0; p < kNumPriorities; ++p) {
    const bool own_class = p == 3 || p == 6;
    qos.add_priority_to_tc(own_class ? p : 0);
    qos.add_tc_tsa(p == 0 || p == 3 ? weft::v1::TSA_ETS : weft::v1::TSA_STRICT);
    qos.add_tc_bandwidth_percent(p == 0 || p == 3 ? 50 : 0);
  }
  qos.set_default_roce_tos(106);
  return qos;
}

std::vector<ParameterError> ValidateDcqcnParams(const DcqcnParams& dcqcn) {
  std::vector<ParameterError> errors;
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    uint32_t value = 0;
    if (!GetDcqcnParam(dcqcn, range.name, &value)) continue;
    if (value < range.min || value > range.max) {
      AddError(&errors, range.name, absl::StrCat(value),
               absl::StrCat("out of range ", range.min, "..", range.max, " (", range.unit, ")"));
    }
  }
  ValidatePriorityList(dcqcn.rp_enabled_priorities(), "rp_enabled_priorities", &errors);
  ValidatePriorityList(dcqcn.np_enabled_priorities(), "np_enabled_priorities", &errors);
  if (dcqcn.has_rp_max_rate() && dcqcn.has_rp_min_rate() && dcqcn.rp_max_rate() != 0 &&
      dcqcn.rp_min_rate() > dcqcn.rp_max_rate()) {
    AddError(&errors, "rp_min_rate", absl::StrCat(dcqcn.rp_min_rate()),
             absl::StrCat("above rp_max_rate=", dcqcn.rp_max_rate(),
                          "; must be <= rp_max_rate (or rp_max_rate 0 = line rate)"));
  }
  // mlx5 cong.c: writing np_cnp_prio forces np_cnp_prio_mode to 0, so asking for both
  // np_cnp_prio and mode 1 can never read back as desired.
  if (dcqcn.has_np_cnp_prio() && dcqcn.has_np_cnp_prio_mode() && dcqcn.np_cnp_prio_mode() != 0) {
    AddError(&errors, "np_cnp_prio_mode", absl::StrCat(dcqcn.np_cnp_prio_mode()),
             "must be 0 (or unset) when np_cnp_prio is set: writing np_cnp_prio forces mode 0");
  }
  return errors;
}

bool HasDcbSettings(const NodeQos& qos) {
  return qos.trust() != weft::v1::TRUST_MODE_UNSPECIFIED || !qos.dscp_to_priority().empty() ||
         qos.pfc_priorities_size() > 0 || qos.priority_to_tc_size() > 0 ||
         qos.tc_bandwidth_percent_size() > 0 || qos.tc_tsa_size() > 0;
}

std::vector<ParameterError> ValidateNodeQos(const NodeQos& qos) {
  std::vector<ParameterError> errors;
  if (qos.has_default_roce_tos() && qos.default_roce_tos() > kMaxRoceTos) {
    AddError(&errors, "default_roce_tos", absl::StrCat(qos.default_roce_tos()),
             absl::StrCat("out of range 0..", kMaxRoceTos, " (IP ToS byte)"));
  }
  if (!HasDcbSettings(qos)) return errors;

  if (qos.trust() != weft::v1::TRUST_MODE_PCP && qos.trust() != weft::v1::TRUST_MODE_DSCP) {
    AddError(&errors, "trust", weft::v1::TrustMode_Name(qos.trust()),
             "must be TRUST_MODE_DSCP or TRUST_MODE_PCP when any DCB setting is given");
  }
  if (qos.trust() == weft::v1::TRUST_MODE_DSCP && qos.dscp_to_priority().empty()) {
    AddError(&errors, "dscp_to_priority", "{}",
             "empty under DSCP trust; map at least one DSCP (the DSCP APP entries switch "
             "the port to DSCP trust)");
  }
  if (qos.trust() == weft::v1::TRUST_MODE_PCP && !qos.dscp_to_priority().empty()) {
    AddError(&errors, "dscp_to_priority", absl::StrCat(qos.dscp_to_priority().size(), " entries"),
             "must be empty under PCP trust (a DSCP APP entry switches the port to DSCP trust)");
  }
  for (const auto& [dscp, priority] : qos.dscp_to_priority()) {
    if (dscp > kMaxDscp) {
      AddError(&errors, "dscp_to_priority", absl::StrCat(dscp, "->", priority),
               absl::StrCat("DSCP ", dscp, " out of range 0..", kMaxDscp));
    }
    if (priority >= kNumPriorities) {
      AddError(&errors, absl::StrCat("dscp_to_priority[", dscp, "]"), absl::StrCat(priority),
               absl::StrCat("priority out of range 0..", kNumPriorities - 1));
    }
  }
  ValidatePriorityList(qos.pfc_priorities(), "pfc_priorities", &errors);

  struct PerTcList {
    const char* name;
    int size;
  };
  for (const PerTcList& list :
       {PerTcList{"priority_to_tc", qos.priority_to_tc_size()},
        PerTcList{"tc_bandwidth_percent", qos.tc_bandwidth_percent_size()},
        PerTcList{"tc_tsa", qos.tc_tsa_size()}}) {
    if (list.size != 8) {
      AddError(&errors, list.name, absl::StrCat(list.size, " entries"),
               "must have exactly 8 entries (one per priority / traffic class)");
    }
  }
  for (int priority = 0; priority < qos.priority_to_tc_size(); ++priority) {
    if (qos.priority_to_tc(priority) >= kNumTrafficClasses) {
      AddError(&errors, absl::StrCat("priority_to_tc[", priority, "]"),
               absl::StrCat(qos.priority_to_tc(priority)),
               absl::StrCat("traffic class out of range 0..", kNumTrafficClasses - 1));
    }
  }
  ValidateEts(qos, &errors);
  return errors;
}

std::vector<ParameterError> ValidateDesiredState(const DesiredState& state) {
  std::vector<ParameterError> errors;
  if (state.version() == 0) {
    AddError(&errors, "version", "0", "must be >= 1 (0 means nothing applied)");
  }
  for (ParameterError& e : ValidateNodeQos(state.qos())) errors.push_back(std::move(e));
  for (ParameterError& e : ValidateDcqcnParams(state.dcqcn())) errors.push_back(std::move(e));

  const NodeQos& qos = state.qos();
  if (!HasDcbSettings(qos)) return errors;
  uint32_t cnp_priority = 0;
  std::string how;
  if (CnpPriority(state, &cnp_priority, &how) && ListContains(qos.pfc_priorities(), cnp_priority)) {
    AddError(&errors, "pfc_priorities", JoinList(qos.pfc_priorities()),
             absl::StrCat("priority ", cnp_priority, " carries CNPs (", how,
                          ") and must not be lossless: remove it from pfc_priorities"));
  }
  if (qos.has_default_roce_tos() && qos.trust() == weft::v1::TRUST_MODE_DSCP) {
    uint32_t roce_dscp = qos.default_roce_tos() >> 2;
    auto it = qos.dscp_to_priority().find(roce_dscp);
    if (it != qos.dscp_to_priority().end() && !ListContains(qos.pfc_priorities(), it->second)) {
      AddError(&errors, "pfc_priorities", JoinList(qos.pfc_priorities()),
               absl::StrCat("the RoCE priority ", it->second, " (default_roce_tos ",
                            qos.default_roce_tos(), " = DSCP ", roce_dscp,
                            ") must have PFC on: add it to pfc_priorities"));
    }
  }
  return errors;
}

std::string FormatParameterError(const ParameterError& error) {
  std::string prefix = error.device().empty() ? "" : absl::StrCat(error.device(), ": ");
  return absl::StrCat(prefix, error.parameter(), " = ", error.value(), ": ", error.reason());
}

}  // namespace weft
