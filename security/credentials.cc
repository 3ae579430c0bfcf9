#include "security/credentials.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace weft::security {
namespace {

// The PEM text of the file that `field` names.
absl::StatusOr<std::string> ReadPem(absl::string_view field, const std::string& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("tls.", field, ": ", text.status().message()));
  }
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls.", field, ": '", path, "' is not a PEM file"));
  }
  return text;
}

absl::Time ToTime(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return absl::InfinitePast();
  return absl::FromTimeT(timegm(&tm));
}

absl::StatusOr<CertificateDates> ParseCertificateDates(const std::string& path,
                                                       const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' holds no PEM certificate"));
  }
  return CertificateDates{ToTime(X509_get0_notBefore(cert.get())),
                          ToTime(X509_get0_notAfter(cert.get()))};
}

// A certificate outside its validity period would only fail the handshake later with
// an opaque "Socket closed"; refusing it here says which file and when.
absl::Status CheckValidNow(absl::string_view field, const std::string& path,
                           const std::string& pem) {
  absl::StatusOr<CertificateDates> dates = ParseCertificateDates(path, pem);
  if (!dates.ok()) {
    return absl::Status(dates.status().code(),
                        absl::StrCat("tls.", field, ": ", dates.status().message()));
  }
  return CheckValidity(field, path, *dates, absl::Now());
}

// What gRPC hands every new handshake: the files re-read every refresh_interval_s
// (FileWatcherCertificateProvider keeps the last good pair when a key and certificate
// do not match, e.g. halfway through a renewal), or the PEM text read now when it is 0.
std::shared_ptr<grpc::experimental::CertificateProviderInterface> MakeProvider(
    const weft::v1::TlsConfig& tls, const std::string& roots,
    const std::vector<grpc::experimental::IdentityKeyCertPair>& identity) {
  if (tls.refresh_interval_s() == 0) {
    return std::make_shared<grpc::experimental::StaticDataCertificateProvider>(roots, identity);
  }
  if (identity.empty()) {
    return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        tls.ca_file(), tls.refresh_interval_s());
  }
  return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key_file(), tls.cert_file(), tls.ca_file(), tls.refresh_interval_s());
}

// This end's certificate chain and key, checked now so that a bad file fails at start
// with its name rather than at the first handshake.
absl::StatusOr<grpc::experimental::IdentityKeyCertPair> ReadIdentity(
    const weft::v1::TlsConfig& tls) {
  grpc::experimental::IdentityKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.certificate_chain, ReadPem("cert_file", tls.cert_file()));
  RETURN_IF_ERROR(CheckValidNow("cert_file", tls.cert_file(), pair.certificate_chain));
  ASSIGN_OR_RETURN(pair.private_key, ReadPem("key_file", tls.key_file()));
  return pair;
}

}  // namespace

absl::StatusOr<CertificateDates> ReadCertificateDates(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  return ParseCertificateDates(path, text);
}

std::string FormatCertificateTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", time, absl::UTCTimeZone());
}

absl::Status CheckValidity(absl::string_view field, const std::string& path,
                           const CertificateDates& dates, absl::Time now) {
  const auto when = FormatCertificateTime;
  if (dates.not_after < now) {
    return absl::FailedPreconditionError(absl::StrCat(
        "tls.", field, ": the certificate in '", path, "' expired on ", when(dates.not_after),
        "; peers refuse the TLS handshake. Renew it (deploy/pki/mint-dev-pki.sh for "
        "development)"));
  }
  if (dates.not_before > now) {
    return absl::FailedPreconditionError(
        absl::StrCat("tls.", field, ": the certificate in '", path, "' is not valid before ",
                     when(dates.not_before), " (check this host's clock)"));
  }
  return absl::OkStatus();
}

bool TlsEnabled(const weft::v1::TlsConfig& tls) {
  return !tls.cert_file().empty() || !tls.key_file().empty() || !tls.ca_file().empty();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const weft::v1::TlsConfig& tls, std::shared_ptr<grpc::AuthMetadataProcessor> processor) {
  if (!TlsEnabled(tls)) return grpc::InsecureServerCredentials();
  ASSIGN_OR_RETURN(const std::string roots, ReadPem("ca_file", tls.ca_file()));
  ASSIGN_OR_RETURN(grpc::experimental::IdentityKeyCertPair identity, ReadIdentity(tls));
  grpc::experimental::TlsServerCredentialsOptions options(
      MakeProvider(tls, roots, {std::move(identity)}));
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  // Presented certificates are verified; absent ones are allowed so that token
  // holders can connect, and the processor refuses what needs a certificate.
  options.set_cert_request_type(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  credentials->SetAuthMetadataProcessor(std::move(processor));
  return credentials;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const weft::v1::TlsConfig& tls, absl::string_view bearer_token) {
  if (!TlsEnabled(tls)) {
    if (!bearer_token.empty()) {
      return absl::InvalidArgumentError(
          "a bearer token needs TLS (a CA file): it would otherwise travel in clear text");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (tls.ca_file().empty()) {
    return absl::InvalidArgumentError(
        "tls.ca_file is needed to verify the controller's certificate");
  }
  if (tls.cert_file().empty() != tls.key_file().empty()) {
    return absl::InvalidArgumentError(
        "tls.cert_file and tls.key_file go together: set both or neither");
  }
  ASSIGN_OR_RETURN(const std::string roots, ReadPem("ca_file", tls.ca_file()));
  std::vector<grpc::experimental::IdentityKeyCertPair> identity;
  if (!tls.cert_file().empty()) {
    ASSIGN_OR_RETURN(grpc::experimental::IdentityKeyCertPair pair, ReadIdentity(tls));
    identity.push_back(std::move(pair));
  }
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(MakeProvider(tls, roots, identity));
  options.watch_root_certs();
  if (!identity.empty()) options.watch_identity_key_cert_pairs();
  // The controller's certificate must chain to the CA and name the dialled host.
  options.set_verify_server_certs(true);
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::experimental::TlsCredentials(options);
  if (bearer_token.empty()) return credentials;
  return grpc::CompositeChannelCredentials(
      credentials, grpc::AccessTokenCredentials(std::string(bearer_token)));
}

}  // namespace weft::security
