// A development PKI for tests that need real certificates: deploy/pki/mint-dev-pki.sh
// run into a fresh directory (a CA, the controller's certificate for 127.0.0.1 and
// localhost, node certificates CN=<node> OU=agent, one certificate and one bearer token
// per role, an expired node certificate, the controller's tokens file), with the
// TlsConfig each end would use. Tests only (testonly target); the script is a data
// dependency, run from the test's runfiles directory.
//
//   ASSERT_OK_AND_ASSIGN(TestPki pki, TestPki::Mint(TempDir() + "/pki", {"gpu-a01"}));
//   MakeServerCredentials(pki.ServerTls(), processor);
//   MakeChannelCredentials(pki.ClientTls("gpu-a01"));
#ifndef WEFT_SECURITY_TEST_PKI_H_
#define WEFT_SECURITY_TEST_PKI_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/config.pb.h"
#include "security/tokens.h"

namespace weft::security {

class TestPki {
 public:
  // Mints into `dir` (created; must not hold an older PKI) with a certificate for each
  // of `nodes`. INTERNAL with the script's output when it fails.
  static absl::StatusOr<TestPki> Mint(const std::string& dir,
                                      const std::vector<std::string>& nodes = {"gpu-node-01"});

  // `dir`/`file`, e.g. Path("ca.crt").
  std::string Path(absl::string_view file) const;
  // The contents of Path(file); "" when it cannot be read.
  std::string Read(absl::string_view file) const;

  // The controller's end: controller.crt, controller.key, ca.crt.
  weft::v1::TlsConfig ServerTls() const;
  // A client's end presenting `cert` (a node or role name: "gpu-a01", "operator"), or
  // no certificate when `cert` is empty; trusts ca.crt.
  weft::v1::TlsConfig ClientTls(absl::string_view cert) const;
  // The bearer token of `role` ("operator") and the table that knows every role's.
  std::string Token(absl::string_view role) const;
  std::shared_ptr<const TokenTable> Tokens() const;

 private:
  explicit TestPki(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_TEST_PKI_H_
