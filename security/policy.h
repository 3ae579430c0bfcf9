// Roles and the one table that says which role each gRPC method of the controller
// needs. Every service the controller serves is listed here; a method that is not in
// the table is refused (default deny), and security:policy_test fails when a service
// in proto/ has a method without a rule.
//
// Roles: viewer (read) < scheduler (place, release, renew) < operator (drain, undrain,
// rollouts, audit log) < admin (everything an operator may, and policy); each of these
// includes the ones before it. `agent` stands apart: it is what a node certificate
// grants, it may call only AgentService, and only an agent may call it.
//
// Pure functions over constant data: thread-safe.
#ifndef WEFT_SECURITY_POLICY_H_
#define WEFT_SECURITY_POLICY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft::security {

enum class Role {
  kNone,  // not authenticated
  kViewer,
  kScheduler,
  kOperator,
  kAdmin,
  kAgent,
};

// "viewer", "scheduler", "operator", "admin", "agent"; "none" for kNone.
absl::string_view RoleName(Role role);
// The inverse of RoleName for the five real roles; nullopt for anything else.
std::optional<Role> ParseRole(absl::string_view name);

// Who is calling: a certificate's CN or a bearer token's name, with its role.
struct Principal {
  std::string name = "anonymous";
  Role role = Role::kNone;
  // "certificate", "token", or "none" (no credentials on the call).
  std::string source = "none";
};

struct MethodRule {
  // The full gRPC method name: "/weft.v1.AdminService/DrainNode".
  absl::string_view method;
  // kNone: anyone, even unauthenticated (health checks).
  Role required;
  // Changes state: written to the audit log with the call's result.
  bool mutating;
  // The request field that names what the call acts on (the audit's target); "" if none.
  absl::string_view target_field;
};

// The rule of `method`, or nullptr when the table has none (the call is refused).
const MethodRule* FindMethodRule(absl::string_view method);

// Every rule, for tests and documentation.
const std::vector<MethodRule>& AllMethodRules();

// Full names ("weft.v1.JobService") of services in proto/ that other processes serve
// (weft-agent's local job socket): the controller never serves them, so they have no
// rules and their methods are refused there like any unknown method.
const std::vector<absl::string_view>& ServicesNotOnTheController();

// Whether a caller holding `role` may call a method that needs `required`.
bool RoleAllows(Role role, Role required);

// OK when `caller` may call `method`. UNAUTHENTICATED when the method needs a role and
// the caller presented no credentials; PERMISSION_DENIED when the caller's role is not
// enough (the message names the caller, its role and the role needed) or the method is
// not in the table.
absl::Status Authorize(absl::string_view method, const Principal& caller);

}  // namespace weft::security

#endif  // WEFT_SECURITY_POLICY_H_
