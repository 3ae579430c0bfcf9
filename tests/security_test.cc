// mTLS, roles and audit end to end: a real weft-controller serving TLS with
// certificates that deploy/pki/mint-dev-pki.sh mints at test time, real weft-agent
// and weftctl processes, and raw gRPC clients for what the binaries would never send
// (another node's name, an expired certificate).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/file.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "proto/weft/v1/job.grpc.pb.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace {

using weft::ReadWholeFile;
using weft::testing::Cluster;
using weft::testing::RunCommand;
using weft::testing::Subprocess;
using weft::testing::TempPath;

constexpr char kMintPki[] = "deploy/pki/mint-dev-pki.sh";

std::string ReadFile(const std::string& path) {
  return ReadWholeFile(path).value_or("");
}

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new std::string(TempPath("pki"));
    weft::testing::CommandResult minted =
        RunCommand({kMintPki, *pki_, "--node", "gpu-a01", "--node", "gpu-a02"},
                   absl::Seconds(60));
    ASSERT_EQ(minted.exit_status, 0) << minted.out << minted.err;
    // A second, unrelated CA with a certificate for the same node name.
    minted = RunCommand({kMintPki, *pki_ + "/other", "--node", "gpu-a01"}, absl::Seconds(60));
    ASSERT_EQ(minted.exit_status, 0) << minted.out << minted.err;
  }

  static std::string Pki(const std::string& file) { return *pki_ + "/" + file; }

  void SetUp() override {
    ASSERT_FALSE(pki_->empty());
    ASSERT_TRUE(cluster_.StartController({"--tls_cert", Pki("controller.crt"), "--tls_key",
                                          Pki("controller.key"), "--tls_ca", Pki("ca.crt"),
                                          "--tokens_file", Pki("tokens")}));
  }

  // A channel to the controller presenting `cert` (a name in the PKI, "" for none).
  std::shared_ptr<grpc::Channel> Channel(const std::string& cert) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadFile(Pki("ca.crt"));
    if (!cert.empty()) {
      options.pem_cert_chain = ReadFile(Pki(cert + ".crt"));
      options.pem_private_key = ReadFile(Pki(cert + ".key"));
    }
    return grpc::CreateChannel(cluster_.address(), grpc::SslCredentials(options));
  }

  grpc::Status Register(const std::shared_ptr<grpc::Channel>& channel, const std::string& node) {
    auto stub = weft::v1::AgentService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    weft::v1::RegisterRequest request;
    request.mutable_node()->set_name(node);
    weft::v1::RegisterResponse response;
    return stub->Register(&context, request, &response);
  }

  // weftctl against the controller with `flags` (TLS, token) and `args` (the command).
  weft::testing::CommandResult Weftctl(std::vector<std::string> flags,
                                       const std::vector<std::string>& args) {
    flags.insert(flags.end(), args.begin(), args.end());
    return cluster_.Weftctl(flags, absl::Seconds(15));
  }

  std::vector<std::string> WithToken(const std::string& role) {
    return {"--tls_ca", Pki("ca.crt"), "--token_file", Pki("token-" + role)};
  }
  std::vector<std::string> WithCert(const std::string& role) {
    return {"--tls_ca", Pki("ca.crt"), "--tls_cert", Pki(role + ".crt"), "--tls_key",
            Pki(role + ".key")};
  }

  void StartAgent(const std::string& node, const std::string& cert) {
    agent_ = &cluster_.StartAgent({.name = node,
                                   .flags = {"--tls_cert", Pki(cert + ".crt"), "--tls_key",
                                             Pki(cert + ".key"), "--tls_ca", Pki("ca.crt")}});
  }

  // Polls `weftctl nodes` as a viewer until `node` is listed.
  ::testing::AssertionResult WaitForNode(const std::string& node, absl::Duration timeout) {
    return weft::testing::WaitFor(
        absl::StrCat(node, " in `weftctl nodes`"), timeout,
        [&](std::string* observed) {
          weft::testing::CommandResult nodes = Weftctl(WithCert("viewer"), {"nodes"});
          *observed = nodes.out + nodes.err;
          return absl::StrContains(nodes.out, node);
        },
        absl::Milliseconds(200));
  }

  // The `weftctl audit` row (as an operator) of `who` calling `method`; "" if none.
  std::string AuditRow(const std::string& who, const std::string& method) {
    weft::testing::CommandResult audit =
        Weftctl(WithToken("operator"), {"audit", "--who", who, "--method", method});
    EXPECT_EQ(audit.exit_status, 0) << audit.err;
    for (absl::string_view line : absl::StrSplit(audit.out, '\n')) {
      if (absl::StrContains(line, who) && absl::StrContains(line, method)) {
        return std::string(line);
      }
    }
    ADD_FAILURE() << "no audit row for " << who << " " << method << " in:\n" << audit.out;
    return "";
  }

  static std::string* pki_;
  Cluster cluster_;
  Subprocess* agent_ = nullptr;  // the last StartAgent's
};

std::string* SecurityTest::pki_ = nullptr;

TEST_F(SecurityTest, AgentWithItsNodeCertificateRegistersAndReports) {
  StartAgent("gpu-a01", "gpu-a01");
  EXPECT_TRUE(WaitForNode("gpu-a01", absl::Seconds(15)));
}

TEST_F(SecurityTest, ControllerExportsWhenItsCertificatesExpire) {
  const std::string metrics = cluster_.Metrics();
  // mint-dev-pki.sh signs for 365 days from now: the gauge is a year out, to the day.
  const double year_out = absl::ToUnixSeconds(absl::Now() + absl::Hours(24 * 365));
  for (const char* file : {"cert", "ca"}) {
    const std::string expiry =
        absl::StrCat("weft_tls_certificate_expiry_timestamp_seconds{file=\"", file, "\"} ");
    const size_t at = metrics.find(expiry);
    ASSERT_NE(at, std::string::npos) << metrics;
    double value = 0;
    ASSERT_TRUE(absl::SimpleAtod(
        metrics.substr(at + expiry.size(), metrics.find('\n', at) - at - expiry.size()), &value));
    EXPECT_NEAR(value, year_out, 24 * 3600) << file;
    EXPECT_NE(metrics.find(absl::StrCat("weft_tls_certificate_valid{file=\"", file, "\"} 1")),
              std::string::npos)
        << metrics;
  }
}

TEST_F(SecurityTest, AgentWithoutCertificateIsRefused) {
  grpc::Status status = Register(Channel(""), "gpu-a01");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "Register needs role agent"))
      << status.error_message();
  // Plaintext to a TLS listener never gets a session.
  auto plaintext = grpc::CreateChannel(cluster_.address(), grpc::InsecureChannelCredentials());
  EXPECT_EQ(Register(plaintext, "gpu-a01").error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(SecurityTest, CertificateForAnotherNodeIsPermissionDenied) {
  grpc::Status status = Register(Channel("gpu-a02"), "gpu-a01");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "certificate is for node 'gpu-a02'"))
      << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "act as node 'gpu-a01'"))
      << status.error_message();

  // The stream checks the same, before it looks at the session: a02's certificate
  // cannot report for a01.
  auto stub = weft::v1::AgentService::NewStub(Channel("gpu-a02"));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stream = stub->Connect(&context);
  weft::v1::AgentMessage hello;
  hello.mutable_hello()->set_node_name("gpu-a01");
  hello.mutable_hello()->set_session_epoch(1);
  stream->Write(hello);
  weft::v1::ControllerMessage reply;
  while (stream->Read(&reply)) {
  }
  grpc::Status finished = stream->Finish();
  EXPECT_EQ(finished.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << finished.error_message();
  EXPECT_TRUE(absl::StrContains(finished.error_message(), "node 'gpu-a02'"))
      << finished.error_message();

  // And the real agent, started as a01 with a02's certificate, never shows up.
  StartAgent("gpu-a01", "gpu-a02");
  EXPECT_TRUE(weft::testing::WaitFor("the agent's log naming the refusal", absl::Seconds(10),
                                     [&](std::string* observed) {
                                       const std::string log = agent_->Log();
                                       *observed = log;
                                       return absl::StrContains(log, "PERMISSION_DENIED") ||
                                              absl::StrContains(
                                                  log, "certificate is for node 'gpu-a02'");
                                     }));
}

TEST_F(SecurityTest, AnAgentRelaysRendezvousOnlyForItsOwnNode) {
  auto stub = weft::v1::RendezvousService::NewStub(Channel("gpu-a02"));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  weft::v1::RendezvousRequest request;
  request.set_job_id("job-1");
  request.set_key("weft/tcp");
  request.set_world_size(1);
  request.set_endpoint("10.0.0.1:9000");
  request.set_timeout_ms(1000);
  request.set_node("gpu-a01");
  weft::v1::RendezvousResponse response;
  grpc::Status status = stub->Rendezvous(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "certificate is for node 'gpu-a02'"))
      << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "act as node 'gpu-a01'"))
      << status.error_message();
  // Its own node's rank goes through.
  grpc::ClientContext own_context;
  own_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  request.set_node("gpu-a02");
  status = stub->Rendezvous(&own_context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(SecurityTest, ExpiredCertificateIsRefused) {
  // The controller fails the handshake: the call never reaches it.
  grpc::Status status = Register(Channel("expired"), "gpu-a01");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();

  // Weft's own clients check the certificate before dialling and say why.
  StartAgent("gpu-a01", "expired");
  ASSERT_EQ(agent_->Wait(absl::Seconds(10)), 2) << agent_->Log();
  EXPECT_TRUE(absl::StrContains(agent_->Log(), "tls.cert_file: the certificate in '" +
                                                   Pki("expired.crt") + "' expired on"))
      << agent_->Log();
  weft::testing::CommandResult weftctl = Weftctl(WithCert("expired"), {"nodes"});
  EXPECT_EQ(weftctl.exit_status, 2);
  EXPECT_TRUE(absl::StrContains(weftctl.err, "expired on")) << weftctl.err;
}

TEST_F(SecurityTest, CertificateFromAnotherCaIsRefused) {
  grpc::Status status = Register(Channel("other/gpu-a01"), "gpu-a01");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  // The agent says what a closed TLS connection may mean.
  StartAgent("gpu-a01", "other/gpu-a01");
  // Its advice may come after the line it waits for; the check below is the assertion.
  weft::testing::WaitFor("the agent's log naming a refused certificate", absl::Seconds(10),
                         [&](std::string*) {
                           return absl::StrContains(agent_->Log(), "a refused certificate");
                         });
  EXPECT_TRUE(absl::StrContains(agent_->Log(), "check that this node's certificate is signed "
                                               "by the controller's CA"))
      << agent_->Log();
  EXPECT_FALSE(absl::StrContains(Weftctl(WithCert("viewer"), {"nodes"}).out, "gpu-a01"));
}

TEST_F(SecurityTest, ViewerTokenCannotDrain) {
  StartAgent("gpu-a01", "gpu-a01");
  ASSERT_TRUE(WaitForNode("gpu-a01", absl::Seconds(15)));
  weft::testing::CommandResult drained =
      Weftctl(WithToken("viewer"), {"drain", "gpu-a01", "--reason", "test"});
  EXPECT_EQ(drained.exit_status, 1) << drained.out << drained.err;
  EXPECT_TRUE(absl::StrContains(drained.err,
                                "token 'dev-viewer' has role viewer; DrainNode needs role "
                                "operator"))
      << drained.err;
  // A viewer may read.
  EXPECT_EQ(Weftctl(WithToken("viewer"), {"nodes"}).exit_status, 0);
  // The refusal is audited, and only an operator may read the audit log.
  EXPECT_TRUE(absl::StrContains(cluster_.controller().Log(),
                                "audit who=dev-viewer role=viewer via=token "
                                "method=/weft.v1.AdminService/DrainNode"))
      << cluster_.controller().Log();
  const std::string row = AuditRow("dev-viewer", "DrainNode");
  EXPECT_TRUE(absl::StrContains(row, "viewer")) << row;
  EXPECT_TRUE(absl::StrContains(row, "PERMISSION_DENIED")) << row;
  weft::testing::CommandResult audit = Weftctl(WithToken("viewer"), {"audit"});
  EXPECT_EQ(audit.exit_status, 1);
  EXPECT_TRUE(absl::StrContains(audit.err, "ListAudit needs role operator")) << audit.err;
}

TEST_F(SecurityTest, OperatorTokenDrainsAndTheDrainIsAudited) {
  StartAgent("gpu-a01", "gpu-a01");
  ASSERT_TRUE(WaitForNode("gpu-a01", absl::Seconds(15)));
  weft::testing::CommandResult drained =
      Weftctl(WithToken("operator"), {"drain", "gpu-a01", "--reason", "maintenance"});
  ASSERT_EQ(drained.exit_status, 0) << drained.out << drained.err;
  // The drain names the token's holder, as the controller authenticated it.
  const std::string node = Weftctl(WithCert("viewer"), {"node", "gpu-a01"}).out;
  EXPECT_TRUE(absl::StrContains(node, "DRAINED")) << node;
  EXPECT_TRUE(absl::StrContains(node, "maintenance (by operator dev-operator)")) << node;
  EXPECT_TRUE(absl::StrContains(cluster_.controller().Log(),
                                "audit who=dev-operator role=operator via=token "
                                "method=/weft.v1.AdminService/DrainNode target=gpu-a01 "
                                "result=\"OK\""))
      << cluster_.controller().Log();
  // `weftctl audit` shows it: who, role, method, target, result.
  const std::string row = AuditRow("dev-operator", "DrainNode");
  EXPECT_TRUE(absl::StrContains(row, "operator")) << row;
  EXPECT_TRUE(absl::StrContains(row, "gpu-a01")) << row;
  EXPECT_TRUE(absl::StrContains(row, "OK")) << row;
}

TEST_F(SecurityTest, WeftctlWithClientCertificates) {
  StartAgent("gpu-a01", "gpu-a01");
  ASSERT_TRUE(WaitForNode("gpu-a01", absl::Seconds(15)));
  // The operator's certificate drains; the drain and the audit name its CN.
  weft::testing::CommandResult drained =
      Weftctl(WithCert("operator"), {"drain", "gpu-a01", "--reason", "cert"});
  EXPECT_EQ(drained.exit_status, 0) << drained.err;
  const std::string events = Weftctl(WithCert("viewer"), {"events", "--node", "gpu-a01"}).out;
  EXPECT_TRUE(absl::StrContains(events, "drained by operator dev-operator")) << events;
  EXPECT_TRUE(absl::StrContains(cluster_.controller().Log(),
                                "audit who=dev-operator role=operator via=certificate "
                                "method=/weft.v1.AdminService/UndrainNode") ||
              absl::StrContains(cluster_.controller().Log(),
                                "audit who=dev-operator role=operator via=certificate "
                                "method=/weft.v1.AdminService/DrainNode target=gpu-a01"))
      << cluster_.controller().Log();
  // A scheduler's certificate may not undrain.
  weft::testing::CommandResult undrain = Weftctl(WithCert("scheduler"), {"undrain", "gpu-a01"});
  EXPECT_EQ(undrain.exit_status, 1);
  EXPECT_TRUE(absl::StrContains(undrain.err, "UndrainNode needs role operator")) << undrain.err;
  // No credentials at all: UNAUTHENTICATED, and weftctl says how to authenticate.
  weft::testing::CommandResult anonymous =
      Weftctl({"--tls_ca", Pki("ca.crt")}, {"nodes"});
  EXPECT_EQ(anonymous.exit_status, 1);
  EXPECT_TRUE(absl::StrContains(anonymous.err, "ListNodes needs role viewer")) << anonymous.err;
  // A node's certificate is no operator's.
  weft::testing::CommandResult node_cert = Weftctl(WithCert("gpu-a01"), {"nodes"});
  EXPECT_EQ(node_cert.exit_status, 1);
  EXPECT_TRUE(absl::StrContains(node_cert.err, "has role agent")) << node_cert.err;
}

}  // namespace
