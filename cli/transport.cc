#include "cli/transport.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/daemon_config.h"
#include "proto/weft/v1/config.pb.h"
#include "security/credentials.h"

namespace weft {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> WeftctlCredentials(
    const TransportFlags& flags) {
  const bool tls = !flags.tls_ca.empty() || !flags.tls_cert.empty() || !flags.tls_key.empty();
  if (!flags.token.empty() && !flags.token_file.empty()) {
    return absl::InvalidArgumentError("give --token or --token_file, not both");
  }
  std::string token = flags.token;
  if (!flags.token_file.empty()) {
    std::ifstream in(flags.token_file);
    if (!in || !std::getline(in, token)) {
      return absl::NotFoundError(absl::StrCat("--token_file: cannot read '", flags.token_file, "'"));
    }
    token = std::string(absl::StripAsciiWhitespace(token));
  }
  if (flags.insecure && tls) {
    return absl::InvalidArgumentError("--insecure contradicts --tls_ca/--tls_cert/--tls_key");
  }
  if (!tls && !flags.insecure && !IsLoopbackAddress(flags.controller)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--controller ", flags.controller,
        " is not a loopback address: give --tls_ca CA.crt (with --tls_cert/--tls_key or "
        "--token) for TLS, or --insecure for plaintext"));
  }
  if (!tls && !token.empty()) {
    return absl::InvalidArgumentError(
        "a token needs TLS: give --tls_ca CA.crt (it would otherwise travel in clear text)");
  }
  weft::v1::TlsConfig config;
  config.set_ca_file(flags.tls_ca);
  config.set_cert_file(flags.tls_cert);
  config.set_key_file(flags.tls_key);
  if (tls && flags.tls_ca.empty()) {
    return absl::InvalidArgumentError("--tls_cert/--tls_key need --tls_ca CA.crt");
  }
  return security::MakeChannelCredentials(config, token);
}

}  // namespace weft
