#include "policy/policy.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/tunable_ranges.h"
#include "common/yaml_proto.h"

namespace weft::policy {
namespace {

using weft::v1::DcqcnParams;
using weft::v1::NodeQos;
using weft::v1::Policy;
using weft::v1::QosClassPolicy;

constexpr uint32_t kEct0 = 2;  // ECN field 10: ECN-capable transport

// Collects "<source>: <field>: <problem>; accepted: <what>" lines.
class Problems {
 public:
  explicit Problems(absl::string_view source) : source_(source) {}

  void Add(absl::string_view field, absl::string_view problem, absl::string_view accepted) {
    lines_.push_back(absl::StrCat(source_, ": ", field, ": ", problem, "; accepted: ", accepted));
  }

  // `text` already says what is accepted (a range from common/tunable_ranges.h).
  void AddWithRange(absl::string_view field, absl::string_view text) {
    lines_.push_back(absl::StrCat(source_, ": ", field, ": ", text));
  }

  absl::Status ToStatus() const {
    if (lines_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(lines_, "\n"));
  }

 private:
  std::string source_;
  std::vector<std::string> lines_;
};

const QosClassPolicy* RoceClass(const weft::v1::QosPolicy& qos) {
  for (const QosClassPolicy& c : qos.classes()) {
    if (c.roce()) return &c;
  }
  return nullptr;
}

const QosClassPolicy* CnpClass(const weft::v1::QosPolicy& qos) {
  for (const QosClassPolicy& c : qos.classes()) {
    if (c.cnp()) return &c;
  }
  return nullptr;
}

const weft::v1::DcqcnProfile* FindProfile(const Policy& policy, absl::string_view name) {
  for (const weft::v1::DcqcnProfile& p : policy.dcqcn().profiles()) {
    if (p.name() == name) return &p;
  }
  return nullptr;
}

std::string DefaultProfileOf(const Policy& policy) {
  return policy.dcqcn().default_profile().empty() ? kDefaultProfileName
                                                  : policy.dcqcn().default_profile();
}

void CheckClasses(const weft::v1::QosPolicy& qos, Problems& problems) {
  if (qos.trust() != weft::v1::TRUST_MODE_DSCP && qos.trust() != weft::v1::TRUST_MODE_PCP) {
    problems.Add("qos.trust", absl::StrCat("value '", weft::v1::TrustMode_Name(qos.trust()),
                                           "' is not a trust mode"),
                 "dscp, pcp");
  }
  if (qos.classes().empty()) {
    problems.Add("qos.classes", "no class is defined",
                 "at least a roce class and a cnp class");
  }
  std::map<std::string, int> names;
  std::map<uint32_t, std::string> dscps;
  std::map<uint32_t, const QosClassPolicy*> lossless_by_priority;
  int roce = 0;
  int cnp = 0;
  for (int i = 0; i < qos.classes_size(); ++i) {
    const QosClassPolicy& c = qos.classes(i);
    const std::string field = absl::StrCat("qos.classes[", i, "] (", c.name(), ")");
    if (++names[c.name()] == 2) {
      problems.Add(absl::StrCat(field, ".name"),
                   absl::StrCat("value '", c.name(), "' names two classes"),
                   "a unique name per class");
    }
    auto [it, inserted] = dscps.emplace(c.dscp(), c.name());
    if (!inserted) {
      problems.Add(absl::StrCat(field, ".dscp"),
                   absl::StrCat("value '", c.dscp(), "' is also the DSCP of class ", it->second),
                   "a DSCP 0..63 no other class uses");
    }
    auto [p, first] = lossless_by_priority.emplace(c.priority(), &c);
    if (!first && p->second->lossless() != c.lossless()) {
      problems.Add(absl::StrCat(field, ".lossless"),
                   absl::StrCat("value '", c.lossless() ? "true" : "false", "' but class ",
                                p->second->name(), " on the same priority ", c.priority(),
                                " says ", p->second->lossless() ? "true" : "false",
                                " (PFC is per priority)"),
                   "the same lossless setting for classes sharing a priority");
    }
    if (c.roce()) {
      ++roce;
      if (!c.lossless()) {
        problems.Add(absl::StrCat(field, ".lossless"),
                     absl::StrCat("value 'false' on the RoCE class (priority ", c.priority(),
                                  " would have PFC off)"),
                     "true: the RoCE priority needs PFC");
      }
    }
    if (c.cnp()) {
      ++cnp;
      if (c.lossless()) {
        problems.Add(absl::StrCat(field, ".lossless"),
                     absl::StrCat("value 'true' on the CNP class (priority ", c.priority(),
                                  ")"),
                     "false: CNPs must not be paused by PFC");
      }
    }
  }
  if (roce != 1) {
    problems.Add("qos.classes", absl::StrCat(roce, " classes have roce: true"),
                 "exactly one (its DSCP sets default_roce_tos)");
  }
  if (cnp != 1) {
    problems.Add("qos.classes", absl::StrCat(cnp, " classes have cnp: true"),
                 "exactly one (its DSCP and priority carry CNPs)");
  }
}

void CheckTrafficClasses(const weft::v1::QosPolicy& qos, Problems& problems) {
  std::map<uint32_t, uint32_t> tc_of_priority;
  std::set<uint32_t> tcs;
  uint32_t ets_sum = 0;
  std::vector<std::string> ets_tcs;
  for (int i = 0; i < qos.traffic_classes_size(); ++i) {
    const weft::v1::TrafficClassPolicy& tc = qos.traffic_classes(i);
    const std::string field = absl::StrCat("qos.traffic_classes[", i, "] (tc ", tc.tc(), ")");
    if (!tcs.insert(tc.tc()).second) {
      problems.Add(absl::StrCat(field, ".tc"),
                   absl::StrCat("value '", tc.tc(), "' is listed twice"),
                   "each traffic class 0..7 once");
    }
    for (uint32_t p : tc.priorities()) {
      auto [it, inserted] = tc_of_priority.emplace(p, tc.tc());
      if (!inserted) {
        problems.Add(absl::StrCat(field, ".priorities"),
                     absl::StrCat("value '", p, "' is also in tc ", it->second),
                     "each priority 0..7 in exactly one traffic class");
      }
    }
    if (tc.tsa() == weft::v1::TSA_ETS) {
      ets_sum += tc.bandwidth_percent();
      ets_tcs.push_back(absl::StrCat(tc.tc()));
    } else if (tc.tsa() == weft::v1::TSA_STRICT && tc.bandwidth_percent() != 0) {
      problems.Add(absl::StrCat(field, ".bandwidth_percent"),
                   absl::StrCat("value '", tc.bandwidth_percent(), "' on a strict TC"),
                   "0 (strict priority takes what it needs)");
    }
  }
  std::vector<std::string> missing;
  for (uint32_t p = 0; p < kNumPriorities; ++p) {
    if (tc_of_priority.count(p) == 0) missing.push_back(absl::StrCat(p));
  }
  if (!missing.empty()) {
    problems.Add("qos.traffic_classes",
                 absl::StrCat("priorities ", absl::StrJoin(missing, ","),
                              " are in no traffic class"),
                 "each priority 0..7 in exactly one traffic class");
  }
  if (!ets_tcs.empty() && ets_sum != 100) {
    problems.Add("qos.traffic_classes.bandwidth_percent",
                 absl::StrCat("the ETS shares of tc ", absl::StrJoin(ets_tcs, ","),
                              " sum to ", ets_sum),
                 "ETS shares summing to 100");
  }
}

void CheckDcqcn(const Policy& policy, Problems& problems) {
  std::map<std::string, int> names;
  for (int i = 0; i < policy.dcqcn().profiles_size(); ++i) {
    const weft::v1::DcqcnProfile& profile = policy.dcqcn().profiles(i);
    if (++names[profile.name()] == 2) {
      problems.Add(absl::StrCat("dcqcn.profiles[", i, "].name"),
                   absl::StrCat("value '", profile.name(), "' names two profiles"),
                   "a unique name per profile");
    }
  }
  auto known = [&](const std::string& name) {
    return name == kDefaultProfileName || names.count(name) > 0;
  };
  auto profile_list = [&] {
    std::set<std::string> all = {kDefaultProfileName};
    for (const auto& [name, count] : names) all.insert(name);
    return absl::StrJoin(all, ", ");
  };
  if (!known(DefaultProfileOf(policy))) {
    problems.Add("dcqcn.default_profile",
                 absl::StrCat("value '", policy.dcqcn().default_profile(),
                              "' is not a profile"),
                 profile_list());
  }
  for (int i = 0; i < policy.dcqcn().assignments_size(); ++i) {
    const weft::v1::ProfileAssignment& a = policy.dcqcn().assignments(i);
    const std::string field = absl::StrCat("dcqcn.assignments[", i, "]");
    if (!known(a.profile())) {
      problems.Add(absl::StrCat(field, ".profile"),
                   absl::StrCat("value '", a.profile(), "' is not a profile"), profile_list());
    }
    if (a.racks().empty() && a.pods().empty() && a.nodes().empty()) {
      problems.Add(field, "names no rack, pod or node", "at least one of racks, pods, nodes");
    }
  }

  const QosClassPolicy* cnp = CnpClass(policy.qos());
  std::set<std::string> to_check = {kDefaultProfileName};
  for (const auto& [name, count] : names) to_check.insert(name);
  for (const std::string& name : to_check) {
    const weft::v1::DcqcnProfile* profile = FindProfile(policy, name);
    const std::string field = absl::StrCat("dcqcn.profiles (", name, ").params");
    if (profile != nullptr && cnp != nullptr) {
      const DcqcnParams& params = profile->params();
      if (params.has_np_cnp_dscp() && params.np_cnp_dscp() != cnp->dscp()) {
        problems.Add(absl::StrCat(field, ".np_cnp_dscp"),
                     absl::StrCat("value '", params.np_cnp_dscp(),
                                  "' differs from the DSCP of the cnp class ", cnp->name()),
                     absl::StrCat(cnp->dscp(), ", or leave it unset"));
      }
      if (params.has_np_cnp_prio() && params.np_cnp_prio() != cnp->priority()) {
        problems.Add(absl::StrCat(field, ".np_cnp_prio"),
                     absl::StrCat("value '", params.np_cnp_prio(),
                                  "' differs from the priority of the cnp class ", cnp->name()),
                     absl::StrCat(cnp->priority(), ", or leave it unset"));
      }
    }
    weft::v1::DesiredState state;
    state.set_version(1);
    *state.mutable_qos() = CompileNodeQos(policy.qos());
    *state.mutable_dcqcn() = CompileDcqcn(policy, name);
    for (const weft::v1::ParameterError& e : ValidateDesiredState(state)) {
      // The QoS problems are the same for every profile: report them once.
      const bool qos_error = !FindDcqcnParamRange(e.parameter()) &&
                             e.parameter() != "rp_enabled_priorities" &&
                             e.parameter() != "np_enabled_priorities";
      if (qos_error && name != kDefaultProfileName) continue;
      problems.AddWithRange(qos_error ? "qos (compiled)" : field,
                            absl::StrCat(e.parameter(), " = ", e.value(), ": ", e.reason()));
    }
  }
}

}  // namespace

Policy DefaultPolicy() {
  Policy policy;
  weft::v1::RolloutPolicy* rollout = policy.mutable_rollout();
  rollout->set_canary_per_rack(1);
  rollout->set_canary_share(0);
  rollout->set_bake_s(300);
  rollout->set_wave_size(10);
  rollout->set_wave_bake_s(60);
  rollout->set_ack_timeout_s(60);
  rollout->set_max_nack_share(0);
  weft::v1::KpiThresholds* kpis = rollout->mutable_kpis();
  kpis->set_pfc_pause_share_increase(0.05);
  kpis->set_ecn_marks_increase_ratio(1.0);
  kpis->set_cnps_increase_ratio(1.0);
  kpis->set_rate_floor_per_s(1000);
  kpis->set_retransmissions_increase_per_s(10);
  kpis->set_throughput_drop_ratio(0.2);
  kpis->set_sustain_s(10);
  return policy;
}

absl::StatusOr<Policy> ParsePolicy(absl::string_view yaml, absl::string_view source_name) {
  Policy policy = DefaultPolicy();
  RETURN_IF_ERROR(MergeYamlString(yaml, source_name, &policy));
  RETURN_IF_ERROR(ValidatePolicy(policy, source_name));
  return policy;
}

absl::StatusOr<Policy> LoadPolicyFile(absl::string_view path) {
  Policy policy = DefaultPolicy();
  RETURN_IF_ERROR(MergeYamlFile(path, &policy));
  RETURN_IF_ERROR(ValidatePolicy(policy, path));
  return policy;
}

absl::Status ValidatePolicy(const Policy& policy, absl::string_view source_name) {
  RETURN_IF_ERROR(ValidateRules(policy, source_name));
  Problems problems(source_name);
  CheckClasses(policy.qos(), problems);
  CheckTrafficClasses(policy.qos(), problems);
  // Compiling needs sane classes and TCs; report those first.
  RETURN_IF_ERROR(problems.ToStatus());
  CheckDcqcn(policy, problems);
  const weft::v1::RolloutPolicy& rollout = policy.rollout();
  if (rollout.canary_per_rack() == 0 && rollout.canary_share() <= 0) {
    problems.Add("rollout.canary_share", "value '0' with canary_per_rack 0 leaves no canary",
                 "canary_per_rack >= 1, or a canary_share above 0 up to 1");
  }
  return problems.ToStatus();
}

NodeQos CompileNodeQos(const weft::v1::QosPolicy& qos) {
  NodeQos out;
  out.set_trust(qos.trust());
  std::set<uint32_t> pfc;
  for (const QosClassPolicy& c : qos.classes()) {
    if (qos.trust() == weft::v1::TRUST_MODE_DSCP) {
      (*out.mutable_dscp_to_priority())[c.dscp()] = c.priority();
    }
    if (c.lossless()) pfc.insert(c.priority());
  }
  for (uint32_t p : pfc) out.add_pfc_priorities(p);
  std::vector<uint32_t> prio_tc(kNumPriorities, 0);
  std::vector<uint32_t> bandwidth(kNumTrafficClasses, 0);
  std::vector<weft::v1::Tsa> tsa(kNumTrafficClasses, weft::v1::TSA_ETS);
  for (const weft::v1::TrafficClassPolicy& tc : qos.traffic_classes()) {
    if (tc.tc() >= kNumTrafficClasses) continue;
    for (uint32_t p : tc.priorities()) {
      if (p < kNumPriorities) prio_tc[p] = tc.tc();
    }
    bandwidth[tc.tc()] = tc.bandwidth_percent();
    tsa[tc.tc()] = tc.tsa();
  }
  for (uint32_t v : prio_tc) out.add_priority_to_tc(v);
  for (uint32_t v : bandwidth) out.add_tc_bandwidth_percent(v);
  for (weft::v1::Tsa v : tsa) out.add_tc_tsa(v);
  if (const QosClassPolicy* roce = RoceClass(qos)) {
    out.set_default_roce_tos(roce->dscp() << 2 | kEct0);
  }
  return out;
}

std::string ProfileNameFor(const Policy& policy, const weft::v1::NodeInfo& node) {
  for (const weft::v1::ProfileAssignment& a : policy.dcqcn().assignments()) {
    const bool matches =
        std::find(a.nodes().begin(), a.nodes().end(), node.name()) != a.nodes().end() ||
        std::find(a.racks().begin(), a.racks().end(), node.rack()) != a.racks().end() ||
        std::find(a.pods().begin(), a.pods().end(), node.pod()) != a.pods().end();
    if (matches) return a.profile();
  }
  return DefaultProfileOf(policy);
}

DcqcnParams CompileDcqcn(const Policy& policy, absl::string_view name) {
  DcqcnParams params = DefaultDcqcnParams();
  if (const weft::v1::DcqcnProfile* profile = FindProfile(policy, name)) {
    const DcqcnParams& overlay = profile->params();
    // A non-empty list replaces the default set (MergeFrom would append).
    if (!overlay.rp_enabled_priorities().empty()) params.clear_rp_enabled_priorities();
    if (!overlay.np_enabled_priorities().empty()) params.clear_np_enabled_priorities();
    params.MergeFrom(overlay);
  }
  if (const QosClassPolicy* cnp = CnpClass(policy.qos())) {
    params.set_np_cnp_dscp(cnp->dscp());
    params.set_np_cnp_prio(cnp->priority());
  }
  return params;
}

weft::v1::DesiredState CompileDesiredState(const Policy& policy,
                                           const weft::v1::NodeInfo& node) {
  weft::v1::DesiredState state;
  state.set_node_name(node.name());
  *state.mutable_qos() = CompileNodeQos(policy.qos());
  *state.mutable_dcqcn() = CompileDcqcn(policy, ProfileNameFor(policy, node));
  return state;
}

weft::v1::DesiredState FirmwareDefaultState(absl::string_view node_name) {
  weft::v1::DesiredState state;
  state.set_node_name(std::string(node_name));
  *state.mutable_dcqcn() = DefaultDcqcnParams();
  return state;
}

}  // namespace weft::policy
