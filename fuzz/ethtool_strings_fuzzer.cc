// Fuzzes ParseEthtoolStringTable (agent/linux/ethtool_stats.h), which splits the
// ETHTOOL_GSTRINGS buffer the kernel fills into counter names. Input: two bytes of
// string count (little-endian), then the buffer. A driver reporting more strings than
// it fills, or names without their NUL, must be refused, never read past the buffer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/linux/ethtool_stats.h"
#include "fuzz/fuzz_check.h"

namespace {
constexpr size_t kNameSlot = 32;  // ETH_GSTRING_LEN
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t count = data[0] | (uint32_t{data[1]} << 8);
  const absl::string_view table(reinterpret_cast<const char*>(data) + 2, size - 2);

  const absl::StatusOr<std::vector<std::string>> names =
      weft::ParseEthtoolStringTable(table, count);
  if (!names.ok()) {
    FUZZ_CHECK(names.status().code() == absl::StatusCode::kInvalidArgument) << names.status();
    FUZZ_CHECK(!names.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(names->size() == count) << names->size() << " names for count " << count;
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    FUZZ_CHECK(!name.empty() && name.size() < kNameSlot) << "name " << i;
    FUZZ_CHECK(name.find('\0') == std::string::npos) << "name " << i;
    // Each name is the start of its own slot.
    FUZZ_CHECK(table.substr(i * kNameSlot, name.size()) == name) << "name " << i;
  }
  return 0;
}
