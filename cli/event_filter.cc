#include "cli/event_filter.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace weft {

absl::StatusOr<weft::v1::ListEventsRequest> MakeEventsRequest(absl::string_view node,
                                                              absl::string_view since,
                                                              int limit) {
  weft::v1::ListEventsRequest request;
  request.set_node(std::string(node));
  if (limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--limit ", limit, " is negative; accepted: 0 (all) or a positive count"));
  }
  request.set_limit(static_cast<uint32_t>(limit));
  if (since.empty()) return request;

  absl::Duration back;
  if (absl::ParseDuration(since, &back)) {
    if (back <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--since '", since, "' is not a positive duration; accepted: e.g. 10m, 1h30m, 90s"));
    }
    request.set_within_ms(static_cast<uint64_t>(
        absl::ToInt64Milliseconds(absl::Ceil(back, absl::Milliseconds(1)))));
    return request;
  }
  absl::Time at;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, since, &at, &error)) {
    if (at < absl::UnixEpoch()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--since '", since, "' is before 1970; accepted: a later time"));
    }
    request.set_since_us(absl::ToUnixMicros(at));
    return request;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--since '", since,
      "' is neither a duration nor a time; accepted: a duration back from now such as "
      "10m, 1h30m or 90s, or an RFC 3339 time such as 2026-11-30T06:00:00Z"));
}

}  // namespace weft
