#include "security/policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft::security {
namespace {

// The last component of "/weft.v1.AdminService/DrainNode", for messages.
absl::string_view ShortName(absl::string_view method) {
  const size_t slash = method.rfind('/');
  return slash == absl::string_view::npos ? method : method.substr(slash + 1);
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kNone:
      return "none";
    case Role::kViewer:
      return "viewer";
    case Role::kScheduler:
      return "scheduler";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
    case Role::kAgent:
      return "agent";
  }
  return "none";
}

std::optional<Role> ParseRole(absl::string_view name) {
  for (Role role : {Role::kViewer, Role::kScheduler, Role::kOperator, Role::kAdmin,
                    Role::kAgent}) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

const std::vector<MethodRule>& AllMethodRules() {
  static const std::vector<MethodRule>* const kRules = new std::vector<MethodRule>{
      // Agents: only as the node named in their certificate (agent_service.cc checks
      // the name).
      {"/weft.v1.AgentService/Register", Role::kAgent, false, ""},
      {"/weft.v1.AgentService/Connect", Role::kAgent, false, ""},
      // Rank rendezvous, relayed by the agents on behalf of their local ranks.
      {"/weft.v1.RendezvousService/Rendezvous", Role::kAgent, false, ""},
      // Operator API.
      {"/weft.v1.AdminService/ListNodes", Role::kViewer, false, ""},
      {"/weft.v1.AdminService/GetNode", Role::kViewer, false, ""},
      {"/weft.v1.AdminService/ListEvents", Role::kViewer, false, ""},
      {"/weft.v1.AdminService/ListRacks", Role::kViewer, false, ""},
      {"/weft.v1.AdminService/DrainNode", Role::kOperator, true, "name"},
      {"/weft.v1.AdminService/UndrainNode", Role::kOperator, true, "name"},
      {"/weft.v1.AdminService/ListAudit", Role::kOperator, false, ""},
      // Placement: schedulers reserve, everyone may look.
      {"/weft.v1.PlacementService/Place", Role::kScheduler, true, "job_id"},
      {"/weft.v1.PlacementService/Release", Role::kScheduler, true, "reservation_id"},
      {"/weft.v1.PlacementService/Renew", Role::kScheduler, true, "reservation_id"},
      {"/weft.v1.PlacementService/ListReservations", Role::kViewer, false, ""},
      {"/weft.v1.PlacementService/GetTopology", Role::kViewer, false, ""},
      // A job (through its scheduler's credentials) reports on its own reservation, once
      // an iteration: telemetry, like an agent's batches, so not audited (a durable audit
      // row per iteration per job would cost an fsync each).
      {"/weft.v1.PlacementService/ReportJobProgress", Role::kScheduler, false, ""},
      {"/weft.v1.PlacementService/ListJobs", Role::kViewer, false, ""},
      // QoS/DCQCN policy rollouts: validating and diffing read; starting one changes the
      // fabric's policy (admin); pausing, resuming and aborting are an operator's.
      {"/weft.v1.RolloutService/ValidatePolicy", Role::kViewer, false, ""},
      {"/weft.v1.RolloutService/DiffPolicy", Role::kViewer, false, ""},
      {"/weft.v1.RolloutService/GetRollout", Role::kViewer, false, ""},
      {"/weft.v1.RolloutService/ListRollouts", Role::kViewer, false, ""},
      {"/weft.v1.RolloutService/StartRollout", Role::kAdmin, true, "source_name"},
      {"/weft.v1.RolloutService/PauseRollout", Role::kOperator, true, "id"},
      {"/weft.v1.RolloutService/ResumeRollout", Role::kOperator, true, "id"},
      {"/weft.v1.RolloutService/AbortRollout", Role::kOperator, true, "id"},
      // DCQCN tuning: a search is an operator's (it changes nothing on the fabric);
      // applying a proposal starts a policy rollout, so it is an admin's, as StartRollout.
      {"/weft.v1.TuneService/Propose", Role::kOperator, true, "scope"},
      {"/weft.v1.TuneService/GetProposal", Role::kViewer, false, ""},
      {"/weft.v1.TuneService/ListProposals", Role::kViewer, false, ""},
      {"/weft.v1.TuneService/ApplyProposal", Role::kAdmin, true, "id"},
      // Pingmesh: verdicts and the probe matrix, read-only.
      {"/weft.v1.PingmeshService/GetStatus", Role::kViewer, false, ""},
      {"/weft.v1.PingmeshService/GetMatrix", Role::kViewer, false, ""},
      // A pre-job check changes what the nodes probe for a few seconds: schedulers run
      // it before a job starts.
      {"/weft.v1.PingmeshService/Check", Role::kScheduler, false, ""},
      // Load balancers and systemd probes check health without credentials.
      {"/grpc.health.v1.Health/Check", Role::kNone, false, ""},
      {"/grpc.health.v1.Health/Watch", Role::kNone, false, ""},
  };
  return *kRules;
}

const std::vector<absl::string_view>& ServicesNotOnTheController() {
  // weft-agent serves JobService to local processes on a Unix socket; weft-fabric, the
  // fabric twin, serves FabricService in plaintext on loopback (a simulation).
  static const std::vector<absl::string_view>* const kServices =
      new std::vector<absl::string_view>{"weft.v1.JobService", "weft.v1.FabricService"};
  return *kServices;
}

const MethodRule* FindMethodRule(absl::string_view method) {
  const std::vector<MethodRule>& rules = AllMethodRules();
  auto it = std::find_if(rules.begin(), rules.end(),
                         [&](const MethodRule& rule) { return rule.method == method; });
  return it == rules.end() ? nullptr : &*it;
}

bool RoleAllows(Role role, Role required) {
  if (required == Role::kNone) return true;
  if (role == Role::kAgent || required == Role::kAgent) return role == required;
  if (role == Role::kNone) return false;
  return static_cast<int>(role) >= static_cast<int>(required);
}

absl::Status Authorize(absl::string_view method, const Principal& caller) {
  const MethodRule* rule = FindMethodRule(method);
  if (rule == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat(
        "method ", method, " has no rule in the controller's authorization table "
        "(security/policy.cc), so it is refused"));
  }
  if (RoleAllows(caller.role, rule->required)) return absl::OkStatus();
  if (caller.role == Role::kNone) {
    return absl::UnauthenticatedError(absl::StrCat(
        ShortName(method), " needs role ", RoleName(rule->required),
        " and the call carries no credentials: present a client certificate (",
        rule->required == Role::kAgent ? "a node certificate, CN = node name, OU = agent"
                                       : "OU = role",
        ") or an 'authorization: Bearer <token>' header"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat(caller.source, " '", caller.name, "' has role ", RoleName(caller.role),
                   "; ", ShortName(method), " needs role ", RoleName(rule->required)));
}

}  // namespace weft::security
