#include "security/test_pki.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/file.h"
#include "tests/subprocess.h"

namespace weft::security {

absl::StatusOr<TestPki> TestPki::Mint(const std::string& dir,
                                      const std::vector<std::string>& nodes) {
  std::vector<std::string> argv = {"deploy/pki/mint-dev-pki.sh", dir};
  for (const std::string& node : nodes) {
    argv.push_back("--node");
    argv.push_back(node);
  }
  const weft::testing::CommandResult minted = weft::testing::RunCommand(argv, absl::Seconds(60));
  if (minted.exit_status != 0) {
    return absl::InternalError(absl::StrCat("mint-dev-pki.sh ", dir, " failed (exit ",
                                            minted.exit_status, "): ", minted.out, minted.err));
  }
  return TestPki(dir);
}

std::string TestPki::Path(absl::string_view file) const { return absl::StrCat(dir_, "/", file); }

std::string TestPki::Read(absl::string_view file) const {
  return ReadWholeFile(Path(file)).value_or("");
}

weft::v1::TlsConfig TestPki::ServerTls() const {
  weft::v1::TlsConfig tls;
  tls.set_cert_file(Path("controller.crt"));
  tls.set_key_file(Path("controller.key"));
  tls.set_ca_file(Path("ca.crt"));
  return tls;
}

weft::v1::TlsConfig TestPki::ClientTls(absl::string_view cert) const {
  weft::v1::TlsConfig tls;
  tls.set_ca_file(Path("ca.crt"));
  if (!cert.empty()) {
    tls.set_cert_file(Path(absl::StrCat(cert, ".crt")));
    tls.set_key_file(Path(absl::StrCat(cert, ".key")));
  }
  return tls;
}

std::string TestPki::Token(absl::string_view role) const {
  return std::string(absl::StripAsciiWhitespace(Read(absl::StrCat("token-", role))));
}

std::shared_ptr<const TokenTable> TestPki::Tokens() const {
  absl::StatusOr<TokenTable> table = TokenTable::LoadFile(Path("tokens"));
  if (!table.ok()) return nullptr;
  return std::make_shared<const TokenTable>(*std::move(table));
}

}  // namespace weft::security
