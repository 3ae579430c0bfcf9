// `weftctl audit`: the controller's audit log of mutating calls (who, role, method,
// target, result), oldest first. Turns the command's flags into a
// weft.v1.ListAuditRequest and renders the answer as a table; weftctl.cc calls the
// controller and prints. --since takes what `weftctl events --since` takes (a duration
// back from now, judged by the controller's clock, or an RFC 3339 time). Pure
// functions apart from RunAuditCommand, which calls the controller; thread-safe.
//
// Table columns: TIME (UTC, ms), WHO, ROLE, METHOD (the RPC name without its
// service), TARGET, RESULT. `--output json` prints the ListAuditResponse instead.
#ifndef WEFT_CLI_AUDIT_COMMAND_H_
#define WEFT_CLI_AUDIT_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft {

// INVALID_ARGUMENT naming the flag and what is accepted for a bad --since or a
// negative --limit. Empty strings and a zero limit mean no such filter.
absl::StatusOr<weft::v1::ListAuditRequest> MakeAuditRequest(absl::string_view who,
                                                             absl::string_view method,
                                                             absl::string_view since,
                                                             int limit);

std::string FormatAuditTable(const weft::v1::ListAuditResponse& response);

struct AuditFlags {
  std::string who;
  std::string method;
  std::string since;
  int limit = 0;
};

// Runs `weftctl audit` (args[0] is "audit"): asks the controller and prints a table,
// or JSON when `json`. Returns the exit status: 0, 1 when the controller refuses or
// cannot be reached, 2 on a usage error (messages on `err`).
int RunAuditCommand(const std::vector<std::string>& args,
                    weft::v1::AdminService::StubInterface& admin, int timeout_ms,
                    const AuditFlags& flags, bool json, std::ostream& out, std::ostream& err);

}  // namespace weft

#endif  // WEFT_CLI_AUDIT_COMMAND_H_
