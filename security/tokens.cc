#include "security/tokens.h"

#include <openssl/sha.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file.h"

namespace weft::security {
namespace {

constexpr absl::string_view kHashPrefix = "sha256:";

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isdigit(c) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

}  // namespace

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

absl::StatusOr<TokenTable> TokenTable::Parse(absl::string_view text,
                                             absl::string_view source) {
  TokenTable table;
  absl::flat_hash_set<std::string> names;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    auto bad = [&](absl::string_view problem) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number, ": ", problem,
                       "; accepted: NAME ROLE sha256:HEX, ROLE one of viewer, scheduler, "
                       "operator, admin, HEX the 64 hex digits of the token's SHA-256"));
    };
    if (fields.size() != 3) {
      return bad(absl::StrCat("expected 3 fields, found ", fields.size()));
    }
    std::optional<Role> role = ParseRole(fields[1]);
    if (!role.has_value() || *role == Role::kAgent) {
      return bad(absl::StrCat("'", fields[1], "' is not a role a token can hold"));
    }
    absl::string_view hash = fields[2];
    if (!absl::ConsumePrefix(&hash, kHashPrefix) || hash.size() != 64 || !IsLowerHex(hash)) {
      return bad(absl::StrCat("'", fields[2], "' is not a SHA-256 hash"));
    }
    if (!names.insert(std::string(fields[0])).second) {
      return bad(absl::StrCat("token name '", fields[0], "' appears twice"));
    }
    Principal principal;
    principal.name = std::string(fields[0]);
    principal.role = *role;
    principal.source = "token";
    if (!table.by_hash_.emplace(std::string(hash), std::move(principal)).second) {
      return bad("the same token hash appears twice");
    }
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::LoadFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path, "tokens_file");
  if (!text.ok()) return text.status();
  return Parse(*text, path);
}

std::optional<Principal> TokenTable::Find(absl::string_view token) const {
  auto it = by_hash_.find(Sha256Hex(token));
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

}  // namespace weft::security
