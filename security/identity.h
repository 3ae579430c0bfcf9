// Who a gRPC caller is: the client certificate of the TLS connection (verified by
// gRPC against the controller's CA) or the call's bearer token.
//
// Certificates: the subject's CN is the caller's name and its OU the role ("agent" for
// a node certificate, whose CN is the node name; "viewer", "scheduler", "operator",
// "admin" for people and schedulers). A token (`authorization: Bearer <token>`) wins
// over the connection's certificate, so weftctl can act with a token over any TLS
// connection.
//
// Pure functions: thread-safe.
#ifndef WEFT_SECURITY_IDENTITY_H_
#define WEFT_SECURITY_IDENTITY_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_context.h"
#include "security/policy.h"
#include "security/tokens.h"

namespace weft::security {

// The CN and OU of a PEM certificate's subject ("" when absent). INVALID_ARGUMENT when
// `pem` is not a certificate.
struct CertificateSubject {
  std::string common_name;
  std::string organizational_unit;
};
absl::StatusOr<CertificateSubject> ParseCertificateSubject(absl::string_view pem);

// The caller of one call. `authorization` is the value of the call's "authorization"
// header, if it has one; `tokens` may be null (no tokens file: certificates only).
// Returns the anonymous principal (role kNone) when the call carries neither a token
// nor a verified certificate. UNAUTHENTICATED for a malformed or unknown token;
// PERMISSION_DENIED for a certificate whose OU is not a role.
absl::StatusOr<Principal> Authenticate(const grpc::AuthContext& auth,
                                       std::optional<absl::string_view> authorization,
                                       const TokenTable* tokens);

// The verified client certificate's CN, or "" without one.
std::string PeerCommonName(const grpc::AuthContext& auth);

// An agent may act (Register, its stream's hello, relaying a rank's rendezvous) only
// as the node its certificate names. OK when `claimed_node`
// equals `certified_node`; PERMISSION_DENIED naming both otherwise, UNAUTHENTICATED
// when there is no certified node (no client certificate).
absl::Status CheckClaimedNode(absl::string_view certified_node,
                              absl::string_view claimed_node);

}  // namespace weft::security

#endif  // WEFT_SECURITY_IDENTITY_H_
