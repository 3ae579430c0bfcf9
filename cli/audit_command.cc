#include "cli/audit_command.h"

#include <chrono>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
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

int RunAuditCommand(const std::vector<std::string>& args,
                    weft::v1::AdminService::StubInterface& admin, int timeout_ms,
                    const AuditFlags& flags, bool json, std::ostream& out, std::ostream& err) {
  if (args.size() != 1) {
    err << "weftctl: 'audit' takes no arguments (use --who, --method, --since, --limit)\n";
    return 2;
  }
  absl::StatusOr<weft::v1::ListAuditRequest> request =
      MakeAuditRequest(flags.who, flags.method, flags.since, flags.limit);
  if (!request.ok()) {
    err << "weftctl: " << request.status().message() << "\n";
    return 2;
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(timeout_ms));
  weft::v1::ListAuditResponse response;
  const grpc::Status status = admin.ListAudit(&context, *request, &response);
  if (!status.ok()) {
    err << "weftctl: audit: " << status.error_message() << "\n";
    return 1;
  }
  out << (json ? FormatJson(response) : FormatAuditTable(response));
  return 0;
}

}  // namespace weft
