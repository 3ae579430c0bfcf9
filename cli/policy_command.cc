#include "cli/policy_command.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/text_output.h"
#include "policy/policy.h"

namespace weft {
namespace {

constexpr char kPolicyUsage[] =
    "usage: weftctl policy validate FILE | weftctl policy diff FILE";

std::string Join(const google::protobuf::RepeatedField<uint32_t>& list) {
  return list.empty() ? "-" : absl::StrJoin(list, ",");
}

}  // namespace

absl::StatusOr<weft::v1::PolicyRequest> ReadPolicyRequest(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path, "policy file");
  if (!text.ok()) return text.status();
  weft::v1::PolicyRequest request;
  request.set_policy_yaml(*std::move(text));
  request.set_source_name(path);
  return request;
}

std::string FormatPolicySummary(const weft::v1::Policy& policy, absl::string_view path) {
  const weft::v1::NodeQos qos = policy::CompileNodeQos(policy.qos());
  std::string out = absl::StrCat(path, ": valid\n");
  absl::StrAppend(&out, "trust ", weft::v1::TrustMode_Name(qos.trust()), ", PFC on priorities ",
                  Join(qos.pfc_priorities()), ", default RoCE ToS ", qos.default_roce_tos(), "\n");
  std::vector<std::vector<std::string>> rows = {{"CLASS", "DSCP", "PRIORITY", "TC", "LOSSLESS"}};
  for (const weft::v1::QosClassPolicy& c : policy.qos().classes()) {
    std::string name = c.name();
    if (c.roce()) name += " (roce)";
    if (c.cnp()) name += " (cnp)";
    rows.push_back({name, absl::StrCat(c.dscp()), absl::StrCat(c.priority()),
                    absl::StrCat(qos.priority_to_tc(c.priority())), c.lossless() ? "yes" : "no"});
  }
  absl::StrAppend(&out, FormatTable(rows));
  std::vector<std::string> profiles = {policy::kDefaultProfileName};
  for (const weft::v1::DcqcnProfile& p : policy.dcqcn().profiles()) {
    if (p.name() != policy::kDefaultProfileName) profiles.push_back(p.name());
  }
  absl::StrAppend(&out, "DCQCN profiles: ", absl::StrJoin(profiles, ", "), "; ",
                  policy.dcqcn().assignments_size(), " assignments\n");
  const weft::v1::RolloutPolicy& r = policy.rollout();
  absl::StrAppend(&out, "rollout: canary ",
                  r.canary_per_rack() > 0 ? absl::StrCat(r.canary_per_rack(), " per rack")
                                          : absl::StrCat(r.canary_share() * 100, "% of nodes"),
                  ", bake ", r.bake_s(), " s, waves of ", r.wave_size(), " baked ",
                  r.wave_bake_s(), " s, ACK timeout ", r.ack_timeout_s(), " s\n");
  return out;
}

std::string FormatPolicyDiff(const weft::v1::DiffPolicyResponse& diff) {
  std::string out = absl::StrCat(diff.nodes_changed(), " of ", diff.nodes_total(),
                                 " nodes would change\n");
  if (diff.changes().empty()) return out;
  std::vector<std::vector<std::string>> rows = {{"PARAMETER", "FROM", "TO", "NODES"}};
  for (const weft::v1::ParameterChange& c : diff.changes()) {
    rows.push_back({c.parameter(), c.from().empty() ? "(none)" : c.from(), c.to(),
                    absl::StrCat(c.nodes())});
  }
  absl::StrAppend(&out, FormatTable(rows));
  return out;
}

int RunPolicyCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 3 || (args[1] != "validate" && args[1] != "diff")) {
    context.err << "weftctl: " << kPolicyUsage << "\n";
    return kExitUsage;
  }
  const std::string& path = args[2];
  if (args[1] == "validate") {
    absl::StatusOr<weft::v1::Policy> policy = policy::LoadPolicyFile(path);
    if (!policy.ok()) return context.Failed("policy validate", policy.status());
    context.out << (context.json() ? FormatJson(*policy) : FormatPolicySummary(*policy, path));
    return kExitOk;
  }
  absl::StatusOr<weft::v1::PolicyRequest> request = ReadPolicyRequest(path);
  if (!request.ok()) return context.Failed("policy diff", request.status());
  weft::v1::DiffPolicyResponse diff;
  absl::Status status = context.controller.Call(
      &weft::v1::RolloutService::StubInterface::DiffPolicy, *request, &diff);
  if (!status.ok()) return context.Failed("policy diff", status);
  context.out << (context.json() ? FormatJson(diff) : FormatPolicyDiff(diff));
  return kExitOk;
}

}  // namespace weft
