// The controller's per-call security, in two pieces that both read the rule table of
// policy.h:
//
// AuthProcessor (a grpc::AuthMetadataProcessor, installed on the TLS server
// credentials) runs before any handler: it identifies the caller (identity.h) and
// refuses the call with UNAUTHENTICATED or PERMISSION_DENIED unless its role allows
// the method; methods missing from the table are refused. The caller it found goes
// with the call (CallerOf), so nothing authenticates it again. Refused mutating calls are
// audited here (their request is never read, so the target is unknown).
//
// AuditInterceptorFactory (a gRPC server interceptor) records every mutating call that
// reached its handler: who (CallerOf), role, method, target (the rule's request field)
// and the status sent back. It runs on plaintext listeners too (the caller is then
// "anonymous"). If the record cannot be written the caller is told so (UNAVAILABLE):
// an operator must not believe an unaudited change was accepted silently.
//
// Thread-safety: both are called concurrently by gRPC threads; they hold no mutable
// state of their own, and the AuditSink must be thread-safe.
#ifndef WEFT_SECURITY_SERVER_AUTH_H_
#define WEFT_SECURITY_SERVER_AUTH_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"
#include "security/policy.h"
#include "security/tokens.h"

namespace weft::security {

struct AuditRecord {
  absl::Time at;
  Principal who;
  std::string method;  // "/weft.v1.AdminService/DrainNode"
  std::string target;  // "gpu-a01", a reservation id, ...; "" when unknown
  absl::Status result;
};

// Where audit records go (the controller's AuditLog). Record must be thread-safe and
// return an error only when the record was not kept.
class AuditSink {
 public:
  virtual ~AuditSink() = default;
  virtual absl::Status Record(const AuditRecord& record) = 0;
};

// The caller of a call that reached its handler or the audit, for records that name
// who acted (a drain, a rollout): authenticated once, by the AuthProcessor when the
// call arrived (verified client certificate or bearer token), and carried with the
// call in its auth context, so it is never a name the request itself carries. The
// anonymous principal on a plaintext listener, where nothing is authenticated.
Principal CallerOf(const grpc::ServerContextBase& context);

class AuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  // `tokens` may be null (certificates only). `clock` and `audit` must outlive the
  // processor; `audit` may be null.
  AuthProcessor(std::shared_ptr<const TokenTable> tokens, const Clock* clock,
                AuditSink* audit);

  // Cheap (a hash and a table lookup), but the audit of a refusal may write to disk.
  bool IsBlocking() const override { return true; }

  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  std::shared_ptr<const TokenTable> tokens_;
  const Clock* const clock_;
  AuditSink* const audit_;
};

class AuditInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `clock` and `audit` must outlive the factory; `audit` must not be null.
  AuditInterceptorFactory(const Clock* clock, AuditSink* audit);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const Clock* const clock_;
  AuditSink* const audit_;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_SERVER_AUTH_H_
