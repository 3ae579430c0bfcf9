#include "common/log_level.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text) {
  const std::string level = absl::AsciiStrToLower(text);
  if (level == "debug") return LogLevel::kDebug;
  if (level == "info") return LogLevel::kInfo;
  if (level == "warning" || level == "warn") return LogLevel::kWarning;
  if (level == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(absl::StrCat(
      "flag --log_level: value '", text, "' is not a level; accepted: debug, info, warning, error"));
}

}  // namespace weft
