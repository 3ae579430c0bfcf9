#include "security/identity.h"

#include <openssl/bio.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grpc/grpc_security_constants.h"

namespace weft::security {
namespace {

std::string SubjectEntry(X509_NAME* subject, int nid) {
  const int index = X509_NAME_get_index_by_NID(subject, nid, -1);
  if (index < 0) return "";
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  const int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return "";
  std::string value(reinterpret_cast<char*>(utf8), length);
  OPENSSL_free(utf8);
  return value;
}

std::string FirstProperty(const grpc::AuthContext& auth, const char* name) {
  std::vector<grpc::string_ref> values = auth.FindPropertyValues(name);
  if (values.empty()) return "";
  return std::string(values.front().data(), values.front().size());
}

}  // namespace

absl::StatusOr<CertificateSubject> ParseCertificateSubject(absl::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (cert == nullptr) return absl::InvalidArgumentError("not a PEM certificate");
  X509_NAME* subject = X509_get_subject_name(cert.get());
  return CertificateSubject{SubjectEntry(subject, NID_commonName),
                            SubjectEntry(subject, NID_organizationalUnitName)};
}

absl::StatusOr<Principal> Authenticate(const grpc::AuthContext& auth,
                                       std::optional<absl::string_view> authorization,
                                       const TokenTable* tokens) {
  if (authorization.has_value()) {
    absl::string_view token = *authorization;
    if (!absl::ConsumePrefix(&token, "Bearer ") || token.empty()) {
      return absl::UnauthenticatedError(
          "the authorization header is not 'Bearer <token>'");
    }
    if (tokens == nullptr) {
      return absl::UnauthenticatedError(
          "this controller accepts no bearer tokens (no tokens_file); use a client "
          "certificate");
    }
    std::optional<Principal> principal = tokens->Find(token);
    if (!principal.has_value()) {
      return absl::UnauthenticatedError(
          "the bearer token is not one the controller knows (check --token and the "
          "controller's tokens_file)");
    }
    return *principal;
  }
  const std::string pem = FirstProperty(auth, GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pem.empty() || !auth.IsPeerAuthenticated()) return Principal();
  absl::StatusOr<CertificateSubject> subject = ParseCertificateSubject(pem);
  if (!subject.ok()) {
    return absl::UnauthenticatedError(
        absl::StrCat("cannot read the client certificate: ", subject.status().message()));
  }
  std::optional<Role> role = ParseRole(subject->organizational_unit);
  if (!role.has_value()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the client certificate CN=", subject->common_name, " has OU '",
        subject->organizational_unit,
        "', which is not a Weft role; accepted OU: agent, viewer, scheduler, operator, "
        "admin"));
  }
  Principal principal;
  principal.name = subject->common_name;
  principal.role = *role;
  principal.source = "certificate";
  return principal;
}

std::string PeerCommonName(const grpc::AuthContext& auth) {
  if (!auth.IsPeerAuthenticated()) return "";
  return FirstProperty(auth, GRPC_X509_CN_PROPERTY_NAME);
}

absl::Status CheckClaimedNode(absl::string_view certified_node,
                              absl::string_view claimed_node) {
  if (certified_node.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the agent of node '", claimed_node,
        "' presented no client certificate; agents must present their node certificate "
        "(CN = node name, OU = agent)"));
  }
  if (certified_node != claimed_node) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the agent's certificate is for node '", certified_node, "' (CN=",
        certified_node, ") but it tried to act as node '", claimed_node,
        "'; an agent may register, report and relay rendezvous only as the node named in "
        "its certificate"));
  }
  return absl::OkStatus();
}

}  // namespace weft::security
