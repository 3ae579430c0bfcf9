// MakeServerCredentials and MakeChannelCredentials with real certificates (minted by
// deploy/pki/mint-dev-pki.sh) on a real gRPC server on 127.0.0.1:0: mutual TLS, the
// host name check, files renewed while running (picked up without a restart), and the
// start-time checks that name the file.
#include "security/credentials.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/testing/temp_dir.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "security/identity.h"
#include "security/test_pki.h"

namespace weft::security {
namespace {

namespace fs = std::filesystem;

using weft::testing::TempPath;

// Lets every call through and remembers the CN of each caller's certificate.
class RecordingProcessor final : public grpc::AuthMetadataProcessor {
 public:
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata&, grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    absl::MutexLock lock(&mu_);
    last_cn_ = PeerCommonName(*context);
    return grpc::Status::OK;
  }
  std::string last_cn() {
    absl::MutexLock lock(&mu_);
    return last_cn_;
  }

 private:
  absl::Mutex mu_;
  std::string last_cn_ ABSL_GUARDED_BY(mu_);
};

// grpc.health.v1.Health answering SERVING: something to call.
class Serving final : public grpc::health::v1::Health::CallbackService {
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest*,
                                  grpc::health::v1::HealthCheckResponse* response) override {
    response->set_status(grpc::health::v1::HealthCheckResponse::SERVING);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// Copies `from`/`file` over `to_dir`/`file` in one rename, as a renewal should.
void Install(const TestPki& from, const std::string& file, const std::string& to_dir,
             const std::string& as = "") {
  const std::string target = to_dir + "/" + (as.empty() ? file : as);
  fs::copy_file(from.Path(file), target + ".new", fs::copy_options::overwrite_existing);
  fs::rename(target + ".new", target);
}

class CredentialsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TestPki> a = TestPki::Mint(TempPath("pki-a"), {"gpu-a01", "gpu-a02"});
    ASSERT_TRUE(a.ok()) << a.status();
    absl::StatusOr<TestPki> b = TestPki::Mint(TempPath("pki-b"), {"gpu-a01"});
    ASSERT_TRUE(b.ok()) << b.status();
    a_ = new TestPki(*a);
    b_ = new TestPki(*b);
  }

  ~CredentialsTest() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // Serves grpc.health.v1.Health on 127.0.0.1 with `tls`.
  void Serve(const weft::v1::TlsConfig& tls) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
        MakeServerCredentials(tls, processor_);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", *credentials, &port_);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  // One health check over a new connection (its own subchannel pool: a handshake with
  // the certificates of now, not a connection another channel already holds).
  grpc::Status Check(const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                     const std::string& host_override = "") {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    if (!host_override.empty()) args.SetSslTargetNameOverride(host_override);
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_),
                                             credentials, args);
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    return stub->Check(&context, request, &response);
  }

  std::shared_ptr<grpc::ChannelCredentials> Client(const TestPki& pki, const std::string& cert) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(pki.ClientTls(cert));
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : nullptr;
  }

  // Retries `check` for up to 10 s (a few refresh intervals) until it returns OK.
  template <typename Check>
  grpc::Status Eventually(Check check) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    grpc::Status status = check();
    while (!status.ok() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(200));
      status = check();
    }
    return status;
  }

  static TestPki* a_;
  static TestPki* b_;
  std::shared_ptr<RecordingProcessor> processor_ = std::make_shared<RecordingProcessor>();
  Serving health_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TestPki* CredentialsTest::a_ = nullptr;
TestPki* CredentialsTest::b_ = nullptr;

TEST_F(CredentialsTest, MutualTlsNamesTheClientAndChecksTheHost) {
  Serve(a_->ServerTls());
  grpc::Status ok = Check(Client(*a_, "gpu-a01"));
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(processor_->last_cn(), "gpu-a01");
  // No client certificate: the connection is allowed (a token may stand in).
  EXPECT_TRUE(Check(Client(*a_, "")).ok());
  EXPECT_EQ(processor_->last_cn(), "");
  // The controller's certificate names localhost, not this host.
  EXPECT_TRUE(Check(Client(*a_, "gpu-a01"), "localhost").ok());
  EXPECT_EQ(Check(Client(*a_, "gpu-a01"), "not-the-controller.example").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // Another CA's certificates, either way round.
  EXPECT_EQ(Check(Client(*b_, "gpu-a01")).error_code(), grpc::StatusCode::UNAVAILABLE);
  // The server refuses an expired certificate in the handshake; Weft's own clients
  // refuse it before dialling, naming the file.
  weft::v1::TlsConfig expired = a_->ClientTls("expired");
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> refused =
      MakeChannelCredentials(expired);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(refused.status().message(),
                                "tls.cert_file: the certificate in '" +
                                    a_->Path("expired.crt") + "' expired on"))
      << refused.status();
}

TEST_F(CredentialsTest, ServerPicksUpRenewedFilesWithoutRestart) {
  const std::string dir = TempPath("served");
  fs::create_directories(dir);
  for (const char* file : {"controller.crt", "controller.key", "ca.crt"}) {
    Install(*a_, file, dir);
  }
  weft::v1::TlsConfig tls;
  tls.set_cert_file(dir + "/controller.crt");
  tls.set_key_file(dir + "/controller.key");
  tls.set_ca_file(dir + "/ca.crt");
  tls.set_refresh_interval_s(1);
  Serve(tls);
  ASSERT_TRUE(Check(Client(*a_, "gpu-a01")).ok());
  EXPECT_EQ(Check(Client(*b_, "gpu-a01")).error_code(), grpc::StatusCode::UNAVAILABLE);

  // Renewal: B's certificate, key and CA replace A's; the server is not touched.
  Install(*b_, "ca.crt", dir);
  Install(*b_, "controller.key", dir);
  Install(*b_, "controller.crt", dir);
  grpc::Status renewed = Eventually([&] { return Check(Client(*b_, "gpu-a01")); });
  EXPECT_TRUE(renewed.ok()) << renewed.error_message();
  EXPECT_EQ(processor_->last_cn(), "gpu-a01");
  // A client that trusts only A's CA no longer accepts the served certificate.
  EXPECT_EQ(Check(Client(*a_, "gpu-a01")).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(CredentialsTest, ClientPicksUpARenewedCertificate) {
  Serve(a_->ServerTls());
  const std::string dir = TempPath("client");
  fs::create_directories(dir);
  Install(*a_, "ca.crt", dir);
  Install(*a_, "gpu-a01.crt", dir, "node.crt");
  Install(*a_, "gpu-a01.key", dir, "node.key");
  weft::v1::TlsConfig tls;
  tls.set_cert_file(dir + "/node.crt");
  tls.set_key_file(dir + "/node.key");
  tls.set_ca_file(dir + "/ca.crt");
  tls.set_refresh_interval_s(1);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(tls);
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  ASSERT_TRUE(Check(*credentials).ok());
  EXPECT_EQ(processor_->last_cn(), "gpu-a01");

  // The same credentials object (an agent keeps one) presents the new certificate on
  // its next connection.
  Install(*a_, "gpu-a02.key", dir, "node.key");
  Install(*a_, "gpu-a02.crt", dir, "node.crt");
  grpc::Status renewed = Eventually([&] {
    grpc::Status status = Check(*credentials);
    if (status.ok() && processor_->last_cn() != "gpu-a02") {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "still the old certificate");
    }
    return status;
  });
  EXPECT_TRUE(renewed.ok()) << renewed.error_message();
  EXPECT_EQ(processor_->last_cn(), "gpu-a02");
}

TEST_F(CredentialsTest, StartChecksNameTheFile) {
  weft::v1::TlsConfig tls = a_->ServerTls();
  tls.set_key_file(TempPath("missing.key"));
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> missing =
      MakeServerCredentials(tls, processor_);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "tls.key_file"))
      << missing.status();
  weft::v1::TlsConfig half = a_->ClientTls("gpu-a01");
  half.clear_key_file();
  EXPECT_EQ(MakeChannelCredentials(half).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeChannelCredentials(weft::v1::TlsConfig(), "token").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::security
