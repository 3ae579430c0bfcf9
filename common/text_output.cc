#include "common/text_output.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/util/json_util.h"

namespace weft {

std::string FormatUnixMicros(int64_t us) {
  if (us == 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMicros(us), absl::UTCTimeZone());
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string FormatJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  // Serialising a valid in-memory message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  return out;
}

}  // namespace weft
