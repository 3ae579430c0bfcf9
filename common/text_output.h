// Output for people and scripts, shared by weftctl and `weft-agent inspect`: aligned
// text tables and proto3 JSON. Pure functions; thread-safe.
#ifndef WEFT_COMMON_TEXT_OUTPUT_H_
#define WEFT_COMMON_TEXT_OUTPUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "google/protobuf/message.h"

namespace weft {

// Columns padded to their widest cell, separated by two spaces, one line per row.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

// A time in µs since the Unix epoch as "2026-12-07T20:12:03Z" (UTC); "-" for 0 (unset).
std::string FormatUnixMicros(int64_t us);

// Proto3 JSON with the original field names and zero values, pretty-printed, ending in
// a newline.
std::string FormatJson(const google::protobuf::Message& message);

}  // namespace weft

#endif  // WEFT_COMMON_TEXT_OUTPUT_H_
