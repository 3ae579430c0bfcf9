// The filter of `weftctl events`: turns its flags into a weft.v1.ListEventsRequest.
// --since takes either a duration back from now ("10m", "1h30m", "90s"), sent as
// within_ms so the controller's clock decides, or an RFC 3339 time
// ("2026-11-30T06:00:00Z"), sent as since_us. Pure functions; thread-safe.
#ifndef WEFT_CLI_EVENT_FILTER_H_
#define WEFT_CLI_EVENT_FILTER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft {

// INVALID_ARGUMENT, naming the flag, the value and what is accepted, when `since` is
// neither a positive duration nor an RFC 3339 time, or `limit` is negative. Empty
// `node`/`since` and a zero `limit` mean no such filter.
absl::StatusOr<weft::v1::ListEventsRequest> MakeEventsRequest(absl::string_view node,
                                                              absl::string_view since,
                                                              int limit);

}  // namespace weft

#endif  // WEFT_CLI_EVENT_FILTER_H_
