// Fuzzes the parsers of sysfs attribute text (agent/linux/sysfs.h) with the same bytes:
// port state ("4: ACTIVE"), link rate ("100 Gb/sec (4X EDR)"), GID type ("RoCE v2") and
// counter values (decimal or 0x hex), and the trimming and "N/A (no PMA)" test every
// value goes through first. A driver or a fixture can put anything in these files; the
// agent must refuse it with INVALID_ARGUMENT, never misread or crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "agent/linux/sysfs.h"
#include "fuzz/fuzz_check.h"

namespace {

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

void CheckU64(absl::string_view text) {
  const absl::StatusOr<uint64_t> value = weft::ParseU64(text);
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  if (!value.ok()) {
    FUZZ_CHECK(value.status().code() == absl::StatusCode::kInvalidArgument) << value.status();
    // Up to 19 digits always fits in 64 bits: such a counter must never be refused.
    FUZZ_CHECK(!(AllDigits(stripped) && stripped.size() <= 19)) << "refused '" << text << "'";
    return;
  }
  // Whatever was accepted reads back the same from its canonical spellings.
  FUZZ_CHECK(*weft::ParseU64(absl::StrCat(*value)) == *value) << *value;
  FUZZ_CHECK(*weft::ParseU64(absl::StrCat("0x", absl::Hex(*value))) == *value) << *value;
  if (AllDigits(stripped)) {
    FUZZ_CHECK(std::strtoull(std::string(stripped).c_str(), nullptr, 10) == *value)
        << "'" << text << "' read as " << *value;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);

  const absl::StatusOr<weft::v1::PortState> state = weft::ParsePortState(text);
  if (state.ok()) {
    FUZZ_CHECK(*state >= 1 && *state <= 5) << "state " << *state;
  } else {
    FUZZ_CHECK(state.status().code() == absl::StatusCode::kInvalidArgument) << state.status();
  }

  const absl::StatusOr<uint64_t> rate_mbps = weft::ParseRateMbps(text);
  if (rate_mbps.ok()) {
    FUZZ_CHECK(absl::StrContains(text, " Gb/sec")) << "'" << text << "'";
  } else {
    FUZZ_CHECK(rate_mbps.status().code() == absl::StatusCode::kInvalidArgument)
        << rate_mbps.status();
  }

  const absl::StatusOr<weft::v1::GidType> gid_type = weft::ParseGidType(text);
  if (gid_type.ok()) {
    FUZZ_CHECK(text == "RoCE v2" || text == "IB/RoCE v1") << "'" << text << "'";
  }

  CheckU64(text);

  // What the backend parses is the trimmed value: trimming is idempotent, leaves no
  // surrounding whitespace, and never changes what a counter reads as.
  const absl::string_view trimmed = weft::TrimSysfsValue(text);
  FUZZ_CHECK(weft::TrimSysfsValue(trimmed) == trimmed) << "'" << text << "'";
  FUZZ_CHECK(trimmed.empty() || (!absl::ascii_isspace(static_cast<unsigned char>(trimmed.front())) &&
                                 !absl::ascii_isspace(static_cast<unsigned char>(trimmed.back()))))
      << "'" << text << "'";
  const absl::StatusOr<uint64_t> untrimmed_value = weft::ParseU64(text);
  const absl::StatusOr<uint64_t> trimmed_value = weft::ParseU64(trimmed);
  FUZZ_CHECK(untrimmed_value.ok() == trimmed_value.ok() &&
             (!trimmed_value.ok() || *untrimmed_value == *trimmed_value))
      << "'" << text << "'";
  // "N/A (no PMA)" is an absent counter, never a number.
  if (weft::IsNoPma(text)) FUZZ_CHECK(!trimmed_value.ok()) << "'" << text << "'";
  return 0;
}
