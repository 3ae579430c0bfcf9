// TokenTable: the bearer tokens operators and schedulers may authenticate with instead
// of a client certificate (`authorization: Bearer <token>`). The controller keeps only
// SHA-256 hashes, read from the file that ControllerConfig.tokens_file names:
//
//   # NAME      ROLE       sha256:HEX (the SHA-256 of the token, 64 hex digits)
//   alice       operator   sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//   slurm       scheduler  sha256:...
//
// One token per line; blank lines and lines starting with # are ignored; names are
// unique. deploy/pki/mint-dev-pki.sh writes such a file with one token per role.
//
// Immutable once loaded: thread-safe.
#ifndef WEFT_SECURITY_TOKENS_H_
#define WEFT_SECURITY_TOKENS_H_

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/policy.h"

namespace weft::security {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

class TokenTable {
 public:
  // Parses the format above. INVALID_ARGUMENT names `source:line`, what is wrong and
  // what is accepted (an unknown role, a malformed hash, a duplicate name or hash).
  static absl::StatusOr<TokenTable> Parse(absl::string_view text, absl::string_view source);
  // Parse() of the file at `path`; NOT_FOUND when it cannot be read.
  static absl::StatusOr<TokenTable> LoadFile(const std::string& path);

  // The token's name and role, or nullopt for a token that is not in the table.
  std::optional<Principal> Find(absl::string_view token) const;

  size_t size() const { return by_hash_.size(); }

 private:
  // Hex SHA-256 -> principal (source "token").
  absl::flat_hash_map<std::string, Principal> by_hash_;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_TOKENS_H_
