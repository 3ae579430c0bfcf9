// `weftctl audit`: the controller's audit log of mutating calls (who, role, method,
// target, result), oldest first. Turns the command's flags into a
// weft.v1.ListAuditRequest and renders the answer as a table; RunAuditCommand, the
// command table's handler, calls the controller and prints. --since takes what
// `weftctl events --since` takes (a duration back from now, judged by the controller's
// clock, or an RFC 3339 time). Pure functions apart from RunAuditCommand, which calls
// the controller; thread-safe.
//
// Table columns: TIME (UTC, ms), WHO, ROLE, METHOD (the RPC name without its
// service), TARGET, RESULT. `--output json` prints the ListAuditResponse instead.
#ifndef WEFT_CLI_AUDIT_COMMAND_H_
#define WEFT_CLI_AUDIT_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/command_context.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft {

// INVALID_ARGUMENT naming the flag and what is accepted for a bad --since or a
// negative --limit. Empty strings and a zero limit mean no such filter.
absl::StatusOr<weft::v1::ListAuditRequest> MakeAuditRequest(absl::string_view who,
                                                             absl::string_view method,
                                                             absl::string_view since,
                                                             int limit);

std::string FormatAuditTable(const weft::v1::ListAuditResponse& response);

// Runs `weftctl audit` (args[0] is "audit") with --who, --method, --since and --limit
// from `context.options`: asks the controller and prints a table, or JSON with
// --output json. Returns the exit status: 0, 1 when the controller refuses or cannot
// be reached, 2 on a usage error (messages on `context.err`).
int RunAuditCommand(const std::vector<std::string>& args, const CommandContext& context);

}  // namespace weft

#endif  // WEFT_CLI_AUDIT_COMMAND_H_
