// `weftctl policy validate FILE` (offline: the controller's own loader and checks,
// controller/policy.h, no controller needed) and `weftctl policy diff FILE` (asks the
// controller what the policy would change on its nodes, RolloutService.DiffPolicy).
// Rendering is pure; RunPolicyCommand, the command table's handler, calls the
// controller through the context and writes to its streams. Thread-compatible.
//
// Exit status: 0 on success (validate: the policy is valid), 1 when the policy is
// invalid or the controller refuses or cannot be reached, 2 on a usage error.
#ifndef WEFT_CLI_POLICY_COMMAND_H_
#define WEFT_CLI_POLICY_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/command_context.h"
#include "proto/weft/v1/policy.pb.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft {

// The file's text and path, as the RolloutService takes them. NOT_FOUND naming the path
// and the system's reason when it cannot be read.
absl::StatusOr<weft::v1::PolicyRequest> ReadPolicyRequest(const std::string& path);

// A few lines for people: what the policy sets (trust, classes, PFC, ToS, profiles and
// their assignments, rollout settings).
std::string FormatPolicySummary(const weft::v1::Policy& policy, absl::string_view path);

// "N of M nodes would change", then one row per change: PARAMETER FROM TO NODES.
std::string FormatPolicyDiff(const weft::v1::DiffPolicyResponse& diff);

// `args` starts with "policy". Prints results to `context.out` and problems to
// `context.err`.
int RunPolicyCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_POLICY_COMMAND_H_
