// Fuzzes loading the QoS/DCQCN policy from YAML bytes (controller/policy.h ParsePolicy:
// DefaultPolicy, strict YAML merge, ValidatePolicy), what `weftctl policy validate`,
// RolloutService and the controller's policy_file watcher run on an operator's file.
// Properties:
//   - a refusal is INVALID_ARGUMENT and names the source (file:line:column or
//     "<source>: <field>: ...");
//   - a policy that loads holds the documented invariants, checked here from the
//     policy itself rather than through ValidatePolicy: one lossless RoCE class, one
//     lossy CNP class, unique names and DSCPs, every priority 0..7 in exactly one
//     traffic class, ETS shares summing to 100, strict TCs at 0%, known profiles;
//   - every desired state it compiles (every profile, every assigned node) passes the
//     agent's ValidateDesiredState and carries the classes' DSCPs and priorities;
//   - it survives the wire (a rollout carries it to weftctl and into the store);
//   - written out again (as JSON, which is YAML) it loads to the same policy.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "common/tunable_ranges.h"
#include "common/yaml_proto.h"
#include "policy/policy.h"
#include "fuzz/fuzz_check.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/weft/v1/policy.pb.h"

namespace {

using weft::v1::Policy;
using weft::v1::QosClassPolicy;
using weft::v1::QosPolicy;

constexpr char kSourceName[] = "policy.yaml";
constexpr uint32_t kPriorities = 8;

// The one class with `flag` (roce or cnp) set.
const QosClassPolicy& OnlyClass(const QosPolicy& qos, bool (QosClassPolicy::*flag)() const) {
  const QosClassPolicy* found = nullptr;
  for (const QosClassPolicy& c : qos.classes()) {
    if (!(c.*flag)()) continue;
    FUZZ_CHECK(found == nullptr) << "two classes " << found->name() << ", " << c.name();
    found = &c;
  }
  FUZZ_CHECK(found != nullptr) << "a flag no class has";
  return *found;
}

void CheckClasses(const QosPolicy& qos) {
  FUZZ_CHECK(qos.trust() == weft::v1::TRUST_MODE_DSCP || qos.trust() == weft::v1::TRUST_MODE_PCP)
      << qos.trust();
  std::set<std::string> names;
  std::set<uint32_t> dscps;
  int lossless_of[kPriorities] = {-1, -1, -1, -1, -1, -1, -1, -1};
  for (const QosClassPolicy& c : qos.classes()) {
    FUZZ_CHECK(!c.name().empty());
    FUZZ_CHECK(names.insert(c.name()).second) << c.name();
    FUZZ_CHECK(c.dscp() <= 63 && dscps.insert(c.dscp()).second) << c.dscp();
    FUZZ_CHECK(c.priority() < kPriorities) << c.priority();
    int& lossless = lossless_of[c.priority()];
    FUZZ_CHECK(lossless < 0 || lossless == c.lossless()) << "priority " << c.priority();
    lossless = c.lossless();
  }
  FUZZ_CHECK(OnlyClass(qos, &QosClassPolicy::roce).lossless());
  FUZZ_CHECK(!OnlyClass(qos, &QosClassPolicy::cnp).lossless());
}

void CheckTrafficClasses(const QosPolicy& qos) {
  std::set<uint32_t> tcs;
  std::set<uint32_t> priorities;
  uint32_t ets_sum = 0;
  bool any_ets = false;
  for (const weft::v1::TrafficClassPolicy& tc : qos.traffic_classes()) {
    FUZZ_CHECK(tc.tc() < 8 && tcs.insert(tc.tc()).second) << tc.tc();
    for (uint32_t p : tc.priorities()) {
      FUZZ_CHECK(p < kPriorities && priorities.insert(p).second) << "priority " << p;
    }
    FUZZ_CHECK(tc.bandwidth_percent() <= 100);
    if (tc.tsa() == weft::v1::TSA_STRICT) FUZZ_CHECK(tc.bandwidth_percent() == 0);
    if (tc.tsa() == weft::v1::TSA_ETS) {
      any_ets = true;
      ets_sum += tc.bandwidth_percent();
    }
  }
  FUZZ_CHECK(priorities.size() == kPriorities) << priorities.size() << " priorities mapped";
  FUZZ_CHECK(!any_ets || ets_sum == 100) << "ETS shares sum to " << ets_sum;
}

// The compiled state of a node using `profile` is one the agent accepts, with the
// classes' numbers in it.
void CheckCompiled(const Policy& policy, const std::string& profile) {
  weft::v1::DesiredState state;
  state.set_version(1);
  *state.mutable_qos() = weft::policy::CompileNodeQos(policy.qos());
  *state.mutable_dcqcn() = weft::policy::CompileDcqcn(policy, profile);
  const auto errors = weft::ValidateDesiredState(state);
  FUZZ_CHECK(errors.empty()) << "profile " << profile << ": "
                             << weft::FormatParameterError(errors.front());
  const QosClassPolicy& roce = OnlyClass(policy.qos(), &QosClassPolicy::roce);
  const QosClassPolicy& cnp = OnlyClass(policy.qos(), &QosClassPolicy::cnp);
  FUZZ_CHECK(state.qos().default_roce_tos() == (roce.dscp() << 2 | 2));
  FUZZ_CHECK(state.dcqcn().np_cnp_dscp() == cnp.dscp());
  FUZZ_CHECK(state.dcqcn().np_cnp_prio() == cnp.priority());
  const auto& pfc = state.qos().pfc_priorities();
  FUZZ_CHECK(std::find(pfc.begin(), pfc.end(), roce.priority()) != pfc.end());
  FUZZ_CHECK(std::find(pfc.begin(), pfc.end(), cnp.priority()) == pfc.end());
  for (const weft::v1::TrafficClassPolicy& tc : policy.qos().traffic_classes()) {
    for (uint32_t p : tc.priorities()) FUZZ_CHECK(state.qos().priority_to_tc(p) == tc.tc());
  }
}

void CheckProfiles(const Policy& policy) {
  std::set<std::string> profiles = {weft::policy::kDefaultProfileName};
  for (const weft::v1::DcqcnProfile& p : policy.dcqcn().profiles()) profiles.insert(p.name());
  CheckCompiled(policy, weft::policy::kDefaultProfileName);
  for (const weft::v1::DcqcnProfile& p : policy.dcqcn().profiles()) {
    CheckCompiled(policy, p.name());
  }
  // A node named by an assignment gets a profile that exists (the first match wins).
  for (const weft::v1::ProfileAssignment& a : policy.dcqcn().assignments()) {
    weft::v1::NodeInfo node;
    if (!a.nodes().empty()) node.set_name(a.nodes(0));
    if (!a.racks().empty()) node.set_rack(a.racks(0));
    if (!a.pods().empty()) node.set_pod(a.pods(0));
    const std::string profile = weft::policy::ProfileNameFor(policy, node);
    FUZZ_CHECK(profiles.count(profile) == 1) << profile;
    weft::v1::DesiredState state = weft::policy::CompileDesiredState(policy, node);
    state.set_version(1);  // the caller's part
    const auto errors = weft::ValidateDesiredState(state);
    FUZZ_CHECK(errors.empty()) << weft::FormatParameterError(errors.front());
  }
  weft::v1::NodeInfo unassigned;
  FUZZ_CHECK(profiles.count(weft::policy::ProfileNameFor(policy, unassigned)) == 1);
}

void CheckSurvivesWire(const Policy& policy) {
  Policy parsed;
  FUZZ_CHECK(parsed.ParseFromString(policy.SerializeAsString()))
      << "a loaded policy cannot be parsed back from the wire:\n" << policy.DebugString();
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(policy, parsed));
}

// JSON is YAML: the policy printed as JSON (default values left out) loads over an empty
// Policy to the same message.
void CheckRoundTrip(const Policy& policy) {
  std::string json;
  const auto printed = google::protobuf::util::MessageToJsonString(policy, &json, [] {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    return options;
  }());
  FUZZ_CHECK(printed.ok()) << printed.ToString();
  Policy again;
  const absl::Status loaded = weft::MergeYamlString(json, "policy.json", &again);
  FUZZ_CHECK(loaded.ok()) << loaded << "\n" << json;
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(policy, again))
      << json << "\nloaded as\n" << again.DebugString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view yaml(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<Policy> policy = weft::policy::ParsePolicy(yaml, kSourceName);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().code() == absl::StatusCode::kInvalidArgument) << policy.status();
    FUZZ_CHECK(absl::StartsWith(policy.status().message(), kSourceName)) << policy.status();
    return 0;
  }
  CheckClasses(policy->qos());
  CheckTrafficClasses(policy->qos());
  CheckProfiles(*policy);
  const weft::v1::RolloutPolicy& rollout = policy->rollout();
  FUZZ_CHECK(rollout.canary_per_rack() > 0 || rollout.canary_share() > 0);
  FUZZ_CHECK(rollout.wave_size() >= 1 && rollout.ack_timeout_s() >= 1);
  CheckSurvivesWire(*policy);
  CheckRoundTrip(*policy);
  return 0;
}
