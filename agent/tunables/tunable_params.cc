#include "agent/tunables/tunable_params.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/tunable_ranges.h"

namespace weft::agent {
namespace {

constexpr char kNone[] = "none";

struct TsaName {
  uint32_t value;
  const char* name;
};
constexpr TsaName kTsaNames[] = {{0, "strict"}, {1, "cbs"}, {2, "ets"}, {255, "vendor"}};

std::string TsaToName(uint32_t tsa) {
  for (const TsaName& t : kTsaNames) {
    if (t.value == tsa) return t.name;
  }
  return absl::StrCat(tsa);
}

absl::StatusOr<uint32_t> TsaFromName(absl::string_view name) {
  for (const TsaName& t : kTsaNames) {
    if (name == t.name) return t.value;
  }
  uint32_t value = 0;
  if (absl::SimpleAtoi(name, &value) && value <= 255) return value;
  return absl::InvalidArgumentError(
      absl::StrCat("tsa '", name, "' is not one of strict, cbs, ets, vendor"));
}

absl::StatusOr<std::vector<uint32_t>> ParseU32List(absl::string_view text) {
  std::vector<uint32_t> values;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    uint32_t value = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &value)) {
      return absl::InvalidArgumentError(absl::StrCat("'", part, "' in '", text,
                                                     "' is not a non-negative integer"));
    }
    values.push_back(value);
  }
  return values;
}

// "prio_tc 0,... tsa ets,... bw 50,..." -> the three lists.
absl::StatusOr<std::vector<std::string>> EtsFields(absl::string_view text) {
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  if (words.size() != 6 || words[0] != "prio_tc" || words[2] != "tsa" || words[4] != "bw") {
    return absl::InvalidArgumentError(
        absl::StrCat("ets value '", text, "' is not 'prio_tc L tsa L bw L'"));
  }
  return std::vector<std::string>{words[1], words[3], words[5]};
}

}  // namespace

std::string FormatPriorityList(const std::vector<uint32_t>& priorities) {
  if (priorities.empty()) return kNone;
  std::vector<uint32_t> sorted = priorities;
  std::sort(sorted.begin(), sorted.end());
  return absl::StrJoin(sorted, ",");
}

absl::StatusOr<std::vector<uint32_t>> ParsePriorityList(absl::string_view text) {
  if (absl::StripAsciiWhitespace(text) == kNone) return std::vector<uint32_t>{};
  return ParseU32List(text);
}

std::string FormatDscpMap(const std::map<uint32_t, uint32_t>& dscp_to_priority) {
  if (dscp_to_priority.empty()) return kNone;
  return absl::StrJoin(dscp_to_priority, ",", absl::PairFormatter(":"));
}

absl::StatusOr<std::map<uint32_t, uint32_t>> ParseDscpMap(absl::string_view text) {
  std::map<uint32_t, uint32_t> map;
  if (absl::StripAsciiWhitespace(text) == kNone) return map;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(entry, ':');
    uint32_t dscp = 0, priority = 0;
    if (!absl::SimpleAtoi(kv.first, &dscp) || !absl::SimpleAtoi(kv.second, &priority)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", entry, "' in '", text, "' is not DSCP:priority"));
    }
    map[dscp] = priority;
  }
  return map;
}

std::string FormatEts(const EtsConfig& ets) {
  std::vector<std::string> tsa;
  for (uint32_t t : ets.tsa) tsa.push_back(TsaToName(t));
  return absl::StrCat("prio_tc ", absl::StrJoin(ets.prio_tc, ","), " tsa ",
                      absl::StrJoin(tsa, ","), " bw ", absl::StrJoin(ets.bw, ","));
}

absl::StatusOr<EtsConfig> ParseEts(absl::string_view text) {
  absl::StatusOr<std::vector<std::string>> fields = EtsFields(text);
  if (!fields.ok()) return fields.status();
  EtsConfig ets;
  absl::StatusOr<std::vector<uint32_t>> prio_tc = ParseU32List((*fields)[0]);
  absl::StatusOr<std::vector<uint32_t>> bw = ParseU32List((*fields)[2]);
  std::vector<std::string> tsa = absl::StrSplit((*fields)[1], ',');
  if (!prio_tc.ok()) return prio_tc.status();
  if (!bw.ok()) return bw.status();
  if (prio_tc->size() != 8 || bw->size() != 8 || tsa.size() != 8) {
    return absl::InvalidArgumentError(absl::StrCat("ets value '", text, "' needs 8 entries per list"));
  }
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<uint32_t> t = TsaFromName(tsa[i]);
    if (!t.ok()) return t.status();
    ets.prio_tc[i] = (*prio_tc)[i];
    ets.bw[i] = (*bw)[i];
    ets.tsa[i] = *t;
  }
  return ets;
}

const std::vector<std::string>& AllParameterNames() {
  static const auto* const kNames = [] {
    auto* names = new std::vector<std::string>{kEtsParam, kPfcParam, kDscpMapParam, kTrustParam,
                                               kRoceTosParam};
    for (const DcqcnParamRange& range : DcqcnParamRanges()) {
      if (std::string(range.name) != "np_cnp_prio_mode") names->push_back(range.name);
    }
    names->push_back("np_cnp_prio_mode");  // after np_cnp_prio, which resets it
    names->push_back(kRpEnabledParam);
    names->push_back(kNpEnabledParam);
    return names;
  }();
  return *kNames;
}

std::vector<ParamValue> DesiredParameters(const weft::v1::DesiredState& state) {
  std::vector<ParamValue> out;
  const weft::v1::NodeQos& qos = state.qos();
  if (HasDcbSettings(qos)) {
    EtsConfig ets;
    for (int i = 0; i < 8 && i < qos.priority_to_tc_size(); ++i) ets.prio_tc[i] = qos.priority_to_tc(i);
    for (int i = 0; i < 8 && i < qos.tc_tsa_size(); ++i) ets.tsa[i] = qos.tc_tsa(i);
    for (int i = 0; i < 8 && i < qos.tc_bandwidth_percent_size(); ++i) {
      ets.bw[i] = qos.tc_bandwidth_percent(i);
    }
    out.push_back({kEtsParam, FormatEts(ets)});
    out.push_back({kPfcParam, FormatPriorityList({qos.pfc_priorities().begin(),
                                                  qos.pfc_priorities().end()})});
    out.push_back({kDscpMapParam, FormatDscpMap({qos.dscp_to_priority().begin(),
                                                 qos.dscp_to_priority().end()})});
    out.push_back({kTrustParam, qos.trust() == weft::v1::TRUST_MODE_DSCP ? "dscp" : "pcp"});
  }
  if (qos.has_default_roce_tos()) {
    out.push_back({kRoceTosParam, absl::StrCat(qos.default_roce_tos())});
  }
  for (const std::string& name : AllParameterNames()) {
    uint32_t value = 0;
    if (GetDcqcnParam(state.dcqcn(), name, &value)) out.push_back({name, absl::StrCat(value)});
  }
  const weft::v1::DcqcnParams& dcqcn = state.dcqcn();
  if (dcqcn.rp_enabled_priorities_size() > 0) {
    out.push_back({kRpEnabledParam, FormatPriorityList({dcqcn.rp_enabled_priorities().begin(),
                                                        dcqcn.rp_enabled_priorities().end()})});
  }
  if (dcqcn.np_enabled_priorities_size() > 0) {
    out.push_back({kNpEnabledParam, FormatPriorityList({dcqcn.np_enabled_priorities().begin(),
                                                        dcqcn.np_enabled_priorities().end()})});
  }
  return out;
}

void ParamsToProto(const ParamMap& params, weft::v1::NodeQos* qos, weft::v1::DcqcnParams* dcqcn) {
  auto find = [&params](const char* name) -> const std::string* {
    auto it = params.find(name);
    return it == params.end() ? nullptr : &it->second;
  };
  if (const std::string* v = find(kEtsParam)) {
    if (absl::StatusOr<EtsConfig> ets = ParseEts(*v); ets.ok()) {
      for (int i = 0; i < 8; ++i) {
        qos->add_priority_to_tc(ets->prio_tc[i]);
        qos->add_tc_tsa(static_cast<weft::v1::Tsa>(ets->tsa[i]));
        qos->add_tc_bandwidth_percent(ets->bw[i]);
      }
    }
  }
  if (const std::string* v = find(kPfcParam)) {
    if (auto list = ParsePriorityList(*v); list.ok()) {
      for (uint32_t p : *list) qos->add_pfc_priorities(p);
    }
  }
  if (const std::string* v = find(kDscpMapParam)) {
    if (auto map = ParseDscpMap(*v); map.ok()) {
      for (const auto& [dscp, priority] : *map) (*qos->mutable_dscp_to_priority())[dscp] = priority;
    }
  }
  if (const std::string* v = find(kTrustParam)) {
    qos->set_trust(*v == "dscp" ? weft::v1::TRUST_MODE_DSCP : weft::v1::TRUST_MODE_PCP);
  }
  uint32_t number = 0;
  if (const std::string* v = find(kRoceTosParam); v != nullptr && absl::SimpleAtoi(*v, &number)) {
    qos->set_default_roce_tos(number);
  }
  for (const DcqcnParamRange& range : DcqcnParamRanges()) {
    if (const std::string* v = find(range.name); v != nullptr && absl::SimpleAtoi(*v, &number)) {
      SetDcqcnParam(range.name, number, dcqcn);
    }
  }
  if (const std::string* v = find(kRpEnabledParam)) {
    if (auto list = ParsePriorityList(*v); list.ok()) {
      for (uint32_t p : *list) dcqcn->add_rp_enabled_priorities(p);
    }
  }
  if (const std::string* v = find(kNpEnabledParam)) {
    if (auto list = ParsePriorityList(*v); list.ok()) {
      for (uint32_t p : *list) dcqcn->add_np_enabled_priorities(p);
    }
  }
}

}  // namespace weft::agent
