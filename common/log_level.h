// The one parser of a log level name, for both daemons' --log_level flag.
// Pure function: thread-safe.
#ifndef WEFT_COMMON_LOG_LEVEL_H_
#define WEFT_COMMON_LOG_LEVEL_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"

namespace weft {

// "debug", "info", "warning" (or "warn"), "error", in any case. INVALID_ARGUMENT naming
// the flag, the value and what is accepted otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text);

}  // namespace weft

#endif  // WEFT_COMMON_LOG_LEVEL_H_
