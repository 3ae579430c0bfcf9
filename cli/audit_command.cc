#include "cli/audit_command.h"

#include <vector>

#include "absl/time/time.h"
#include "cli/event_filter.h"
#include "common/text_output.h"

namespace weft {

absl::StatusOr<weft::v1::ListAuditRequest> MakeAuditRequest(absl::string_view who,
                                                             absl::string_view method,
                                                             absl::string_view since,
                                                             int limit) {
  // The same --since and --limit rules as `weftctl events`.
  absl::StatusOr<weft::v1::ListEventsRequest> window = MakeEventsRequest("", since, limit);
  if (!window.ok()) return window.status();
  weft::v1::ListAuditRequest request;
  request.set_since_us(window->since_us());
  request.set_within_ms(window->within_ms());
  request.set_limit(window->limit());
  request.set_who(std::string(who));
  request.set_method(std::string(method));
  return request;
}

std::string FormatAuditTable(const weft::v1::ListAuditResponse& response) {
  if (response.entries().empty()) return "no audit entries match\n";
  std::vector<std::vector<std::string>> rows = {
      {"TIME", "WHO", "ROLE", "METHOD", "TARGET", "RESULT"}};
  for (const weft::v1::AuditLogEntry& entry : response.entries()) {
    const size_t slash = entry.method().rfind('/');
    rows.push_back({absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ",
                                     absl::FromUnixMicros(entry.time_us()),
                                     absl::UTCTimeZone()),
                    entry.who(), entry.role().empty() ? "-" : entry.role(),
                    slash == std::string::npos ? entry.method() : entry.method().substr(slash + 1),
                    entry.target().empty() ? "-" : entry.target(), entry.result()});
  }
  return FormatTable(rows);
}

int RunAuditCommand(const std::vector<std::string>& args, const CommandContext& context) {
  if (args.size() != 1) {
    context.err << "weftctl: 'audit' takes no arguments (use --who, --method, --since, --limit)\n";
    return kExitUsage;
  }
  const WeftctlOptions& options = context.options;
  absl::StatusOr<weft::v1::ListAuditRequest> request =
      MakeAuditRequest(options.who, options.method, options.since, options.limit);
  if (!request.ok()) {
    context.err << "weftctl: " << request.status().message() << "\n";
    return kExitUsage;
  }
  weft::v1::ListAuditResponse response;
  absl::Status status = context.controller.Call(
      &weft::v1::AdminService::StubInterface::ListAudit, *request, &response);
  if (!status.ok()) return context.Failed("audit", status);
  context.out << (context.json() ? FormatJson(response) : FormatAuditTable(response));
  return kExitOk;
}

}  // namespace weft
