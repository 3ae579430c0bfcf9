// `weftctl policy validate FILE` (offline: the controller's own loader and checks,
// controller/policy.h, no controller needed) and `weftctl policy diff FILE` (asks the
// controller what the policy would change on its nodes, RolloutService.DiffPolicy).
// weftctl.cc only dispatches here. Rendering is pure; Run* talk to the given stub and
// write to the given streams. Thread-compatible.
//
// Exit status: 0 on success (validate: the policy is valid), 1 when the policy is
// invalid or the controller refuses or cannot be reached, 2 on a usage error.
#ifndef WEFT_CLI_POLICY_COMMAND_H_
#define WEFT_CLI_POLICY_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/policy.pb.h"
#include "proto/weft/v1/rollout.grpc.pb.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft {

// What the policy and rollout commands share with the rest of weftctl.
struct RolloutCliOptions {
  std::string controller;  // HOST:PORT, for error messages
  bool json = false;
  int timeout_ms = 5000;
  std::string reason;  // rollout abort --reason
};

// The file's text and path, as the RolloutService takes them. NOT_FOUND naming the path
// and the system's reason when it cannot be read.
absl::StatusOr<weft::v1::PolicyRequest> ReadPolicyRequest(const std::string& path);

// A few lines for people: what the policy sets (trust, classes, PFC, ToS, profiles and
// their assignments, rollout settings).
std::string FormatPolicySummary(const weft::v1::Policy& policy, absl::string_view path);

// "N of M nodes would change", then one row per change: PARAMETER FROM TO NODES.
std::string FormatPolicyDiff(const weft::v1::DiffPolicyResponse& diff);

// `args` starts with "policy". Prints results to `out` and problems to `err`.
int RunPolicyCommand(const std::vector<std::string>& args,
                     weft::v1::RolloutService::StubInterface& stub,
                     const RolloutCliOptions& options, std::ostream& out, std::ostream& err);

// One line on `err` for a failed call: unreachable controller (with a hint) or the
// controller's message. Returns 1.
int ReportRpcFailure(absl::string_view what, const grpc::Status& status,
                     const RolloutCliOptions& options, std::ostream& err);

}  // namespace weft

#endif  // WEFT_CLI_POLICY_COMMAND_H_
