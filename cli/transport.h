// How weftctl reaches the controller: the global flags --tls_ca, --tls_cert,
// --tls_key, --token / --token_file and --insecure turned into channel credentials.
//
//   --tls_ca CA.crt [--tls_cert me.crt --tls_key me.key]   mTLS (role from the OU)
//   --tls_ca CA.crt --token T | --token_file F              TLS + bearer token
//   (none)                                                  plaintext, loopback only
//   --insecure                                              plaintext to any address
//
// Pure function over the flags plus file reads: thread-safe.
#ifndef WEFT_CLI_TRANSPORT_H_
#define WEFT_CLI_TRANSPORT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"

namespace weft {

struct TransportFlags {
  std::string controller;  // HOST:PORT
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string token;
  std::string token_file;  // first line is the token (mint-dev-pki.sh's token-<role>)
  bool insecure = false;
};

// INVALID_ARGUMENT (a usage error naming the flags to use) for plaintext to a
// non-loopback address without --insecure, --insecure with TLS flags, a token without
// --tls_ca, both --token and --token_file, or --tls_cert without --tls_key; NOT_FOUND
// for a file that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> WeftctlCredentials(
    const TransportFlags& flags);

}  // namespace weft

#endif  // WEFT_CLI_TRANSPORT_H_
