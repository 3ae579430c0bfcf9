#include "security/identity.h"

#include <string>

#include "gtest/gtest.h"

namespace weft::security {
namespace {

// Self-signed, subject O=Weft test, OU=operator, CN=alice (openssl req -x509 ...
// -days 36500).
constexpr char kAlice[] = R"(-----BEGIN CERTIFICATE-----
MIIBxTCCAWugAwIBAgIUIfmDKGccS+IpgN0OU4ARw6xzvMAwCgYIKoZIzj0EAwIw
NzESMBAGA1UECgwJV2VmdCB0ZXN0MREwDwYDVQQLDAhvcGVyYXRvcjEOMAwGA1UE
AwwFYWxpY2UwIBcNMjYxMTMwMTAxNjIxWhgPMjEyNjExMDYxMDE2MjFaMDcxEjAQ
BgNVBAoMCVdlZnQgdGVzdDERMA8GA1UECwwIb3BlcmF0b3IxDjAMBgNVBAMMBWFs
aWNlMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE1nMZoyENtkpF17sF37rS57se
sBge8zPvLJVatXQq7+8NE/JXk9LmEJX/aGB6HD0LDay0I2J6HJ5IAJuMH+kKO6NT
MFEwHQYDVR0OBBYEFOYwz3Klh1hX5ZqYzi5t/nbDG/lhMB8GA1UdIwQYMBaAFOYw
z3Klh1hX5ZqYzi5t/nbDG/lhMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID
SAAwRQIhALj9UJXfmUCJ0cOXUoiEWZLHNnJ4Dgg2AejhhEpoy/b8AiA3xedVjiv4
9Aftg8S8qTHfdq8obb2oUdB6EZoN1pfU6A==
-----END CERTIFICATE-----
)";

TEST(IdentityTest, ReadsCommonNameAndUnitOfTheSubject) {
  absl::StatusOr<CertificateSubject> subject = ParseCertificateSubject(kAlice);
  ASSERT_TRUE(subject.ok()) << subject.status();
  EXPECT_EQ(subject->common_name, "alice");
  EXPECT_EQ(subject->organizational_unit, "operator");
  EXPECT_EQ(ParseCertificateSubject("-----BEGIN CERTIFICATE-----\nxx\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IdentityTest, AnAgentActsOnlyAsItsCertificatesNode) {
  EXPECT_TRUE(CheckClaimedNode("gpu-a01", "gpu-a01").ok());
  absl::Status other = CheckClaimedNode("gpu-a02", "gpu-a01");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(other.message(),
            "the agent's certificate is for node 'gpu-a02' (CN=gpu-a02) but it tried to act "
            "as node 'gpu-a01'; an agent may register, report and relay rendezvous only as "
            "the node named in its certificate");
  EXPECT_EQ(CheckClaimedNode("", "gpu-a01").code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace weft::security
