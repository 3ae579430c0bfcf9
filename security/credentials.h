// gRPC transport credentials from a TlsConfig (proto/weft/v1/config.proto): mTLS
// with the PEM files it names, or plaintext when it names none.
//
// Server side: the controller presents its certificate and asks every client for
// one; a certificate that is presented must chain to ca_file and be within its
// validity period, or the handshake fails. Clients without a certificate still
// connect (operators with a bearer token); the AuthProcessor (server_auth.h) then
// decides per method. Client side: the controller's certificate must chain to ca_file
// and cover the dialled host (SAN); the client's own certificate is optional for
// weftctl (a token may stand in) and required for agents (config validation).
//
// Renewal: with tls.refresh_interval_s above 0 (the daemons' default is 60) gRPC's
// FileWatcherCertificateProvider re-reads the three files that often, so a renewed
// certificate, key or CA is used by every handshake after the next refresh, without a
// restart; connections already open keep the certificates they were made with. A key
// that does not match its certificate (a renewal written halfway) is ignored until it
// does; the files are checked (readable, PEM, within validity) only when the
// credentials are made, and after that by CertificateMonitor (certificate_monitor.h),
// which the daemons run beside. 0 reads the files once (weftctl, one call per run).
//
// Functions read files and are thread-safe.
#ifndef WEFT_SECURITY_CREDENTIALS_H_
#define WEFT_SECURITY_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::security {

struct CertificateDates {
  absl::Time not_before;
  absl::Time not_after;
};

// The validity period of the first certificate in the PEM file at `path`. NOT_FOUND
// when it cannot be read, INVALID_ARGUMENT when it holds no PEM certificate.
absl::StatusOr<CertificateDates> ReadCertificateDates(const std::string& path);

// A certificate date as errors and logs show it: "2027-11-30 19:11:43 UTC".
std::string FormatCertificateTime(absl::Time time);

// OK when `dates` cover `now`; otherwise FAILED_PRECONDITION saying that the
// certificate in `path` (the config field `field`, e.g. "cert_file") has expired or is
// not yet valid, and when.
absl::Status CheckValidity(absl::string_view field, const std::string& path,
                           const CertificateDates& dates, absl::Time now);

// Whether `tls` names any file (a config that turns TLS on).
bool TlsEnabled(const weft::v1::TlsConfig& tls);

// Server credentials: mTLS when `tls` is set (all three files, read now; NOT_FOUND
// names the field and path of a file that cannot be read, INVALID_ARGUMENT one that is
// not PEM, FAILED_PRECONDITION a certificate that has expired or is not yet valid), with `processor` authenticating and authorizing every call; plaintext
// when `tls` is empty (`processor` is then unused).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const weft::v1::TlsConfig& tls, std::shared_ptr<grpc::AuthMetadataProcessor> processor);

// Channel credentials: TLS when `tls` is set (ca_file required; cert_file and key_file
// together or not at all; the same errors as above), plus `bearer_token` on every call when it is not empty;
// plaintext when `tls` is empty, in which case a token is refused (INVALID_ARGUMENT:
// it would travel in clear text and the controller ignores it anyway).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const weft::v1::TlsConfig& tls, absl::string_view bearer_token = "");

}  // namespace weft::security

#endif  // WEFT_SECURITY_CREDENTIALS_H_
