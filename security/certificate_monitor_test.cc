// CertificateMonitor against real certificates minted by deploy/pki/mint-dev-pki.sh: the
// expiry gauge is the certificate's notAfter, and a renewal that installs an expired
// certificate (which gRPC would serve without a word) turns weft_tls_certificate_valid
// to 0, and back to 1 when a good one follows.
#include "security/certificate_monitor.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "common/testing/metrics.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "security/test_pki.h"

namespace weft::security {
namespace {

namespace fs = std::filesystem;

using weft::testing::TempPath;

// Copies `from` over `to` in one rename, as a renewal should.
void Install(const std::string& from, const std::string& to) {
  fs::copy_file(from, to + ".new", fs::copy_options::overwrite_existing);
  fs::rename(to + ".new", to);
}

class CertificateMonitorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TestPki> pki = TestPki::Mint(TempPath("pki"), {"gpu-a01"});
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new TestPki(*std::move(pki));
  }
  static void TearDownTestSuite() { delete pki_; }

  static TestPki* pki_;
};
TestPki* CertificateMonitorTest::pki_ = nullptr;

TEST_F(CertificateMonitorTest, ReadsTheValidityPeriod) {
  absl::StatusOr<CertificateDates> node = ReadCertificateDates(pki_->Path("gpu-a01.crt"));
  ASSERT_TRUE(node.ok()) << node.status();
  // mint-dev-pki.sh signs node certificates for 365 days from now.
  EXPECT_LT(node->not_before, absl::Now() + absl::Minutes(1));
  EXPECT_GT(node->not_after, absl::Now() + absl::Hours(24 * 364));
  EXPECT_LT(node->not_after, absl::Now() + absl::Hours(24 * 366));

  absl::StatusOr<CertificateDates> expired = ReadCertificateDates(pki_->Path("expired.crt"));
  ASSERT_TRUE(expired.ok()) << expired.status();
  EXPECT_LT(expired->not_after, absl::Now());

  EXPECT_EQ(ReadCertificateDates(TempPath("missing.crt")).status().code(),
            absl::StatusCode::kNotFound);
  // A key is PEM but not a certificate.
  absl::StatusOr<CertificateDates> key = ReadCertificateDates(pki_->Path("gpu-a01.key"));
  EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find("holds no PEM certificate"), std::string::npos);
}

TEST_F(CertificateMonitorTest, GaugesFollowARenewalThatInstallsAnExpiredCertificate) {
  const std::string dir = TempPath("agent-tls");
  fs::create_directories(dir);
  Install(pki_->Path("gpu-a01.crt"), dir + "/node.crt");
  Install(pki_->Path("ca.crt"), dir + "/ca.crt");
  weft::v1::TlsConfig tls;
  tls.set_cert_file(dir + "/node.crt");
  tls.set_key_file(pki_->Path("gpu-a01.key"));
  tls.set_ca_file(dir + "/ca.crt");
  prometheus::Registry registry;
  // An hour between checks: the test drives them with CheckNow.
  std::unique_ptr<CertificateMonitor> monitor =
      CertificateMonitor::Start(tls, registry, absl::Hours(1));
  ASSERT_NE(monitor, nullptr);

  const CertificateDates node = *ReadCertificateDates(pki_->Path("gpu-a01.crt"));
  const CertificateDates ca = *ReadCertificateDates(pki_->Path("ca.crt"));
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_expiry_timestamp_seconds",
                        {{"file", "cert"}}),
            absl::ToUnixSeconds(node.not_after));
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_expiry_timestamp_seconds",
                        {{"file", "ca"}}),
            absl::ToUnixSeconds(ca.not_after));
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "cert"}}), 1);
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "ca"}}), 1);

  // A bad renewal: the expired certificate replaces the good one.
  Install(pki_->Path("expired.crt"), dir + "/node.crt");
  monitor->CheckNow();
  const CertificateDates expired = *ReadCertificateDates(pki_->Path("expired.crt"));
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "cert"}}), 0);
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_expiry_timestamp_seconds",
                        {{"file", "cert"}}),
            absl::ToUnixSeconds(expired.not_after));
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "ca"}}), 1);

  // The file disappears: still invalid, the last expiry stays.
  fs::remove(dir + "/node.crt");
  monitor->CheckNow();
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "cert"}}), 0);

  // A good renewal puts it right.
  Install(pki_->Path("gpu-a01.crt"), dir + "/node.crt");
  monitor->CheckNow();
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "cert"}}), 1);
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_expiry_timestamp_seconds",
                        {{"file", "cert"}}),
            absl::ToUnixSeconds(node.not_after));
}

TEST_F(CertificateMonitorTest, ChecksOnItsOwnThread) {
  const std::string dir = TempPath("thread-tls");
  fs::create_directories(dir);
  Install(pki_->Path("ca.crt"), dir + "/ca.crt");
  weft::v1::TlsConfig tls;
  tls.set_ca_file(dir + "/ca.crt");  // weftctl-like: a CA only
  prometheus::Registry registry;
  std::unique_ptr<CertificateMonitor> monitor =
      CertificateMonitor::Start(tls, registry, absl::Milliseconds(20));
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "ca"}}), 1);
  EXPECT_FALSE(
      MetricValue(registry, "weft_tls_certificate_valid", {{"file", "cert"}}).has_value());
  Install(pki_->Path("expired.crt"), dir + "/ca.crt");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (MetricValue(registry, "weft_tls_certificate_valid", {{"file", "ca"}}) != 0 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(MetricValue(registry, "weft_tls_certificate_valid", {{"file", "ca"}}), 0);
}

TEST(CertificateMonitorPlaintextTest, NothingToWatchWithoutTls) {
  prometheus::Registry registry;
  EXPECT_EQ(CertificateMonitor::Start(weft::v1::TlsConfig(), registry), nullptr);
}

}  // namespace
}  // namespace weft::security
