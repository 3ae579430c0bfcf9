#include "controller/api/rendezvous_service.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "security/credentials.h"
#include "security/server_auth.h"
#include "security/test_pki.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

weft::v1::RendezvousRequest Request(uint32_t rank, uint32_t world_size, uint32_t timeout_ms,
                                    const std::string& job = "job-1") {
  weft::v1::RendezvousRequest r;
  r.set_job_id(job);
  r.set_key("weft/tcp");
  r.set_rank(rank);
  r.set_world_size(world_size);
  r.set_endpoint("endpoint-" + std::to_string(rank));
  r.set_timeout_ms(timeout_ms);
  r.set_node("node-" + std::to_string(rank % 2));
  return r;
}

// The service on a real gRPC server on 127.0.0.1:0, called through real stubs.
class RendezvousServiceTest : public ::testing::Test {
 protected:
  RendezvousServiceTest() : RendezvousServiceTest(RendezvousServiceOptions()) {
    Serve(grpc::InsecureServerCredentials());
    Connect(grpc::InsecureChannelCredentials());
  }
  explicit RendezvousServiceTest(RendezvousServiceOptions options)
      : service_(&clock_, registry_, options) {}
  ~RendezvousServiceTest() override {
    service_.Stop();
    if (server_ != nullptr) server_->Shutdown();
  }

  void Serve(std::shared_ptr<grpc::ServerCredentials> credentials) {
    service_.Start();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  // Call() goes through a channel with `credentials` from now on.
  void Connect(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    stub_ = weft::v1::RendezvousService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), credentials));
  }

  grpc::Status Call(const weft::v1::RendezvousRequest& request,
                    weft::v1::RendezvousResponse* response,
                    absl::Duration deadline = absl::Seconds(30)) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    return stub_->Rendezvous(&context, request, response);
  }

  // Waits (real time: the calls arrive over gRPC) until the table holds `n` waiters.
  bool AwaitTableWaiters(size_t n) {
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (service_.table().waiter_count() != n) {
      if (absl::Now() > give_up) return false;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return true;
  }

  double Calls(const std::string& result) {
    return MetricValue(registry_, "weft_controller_rendezvous_total", {{"result", result}})
        .value_or(-1);
  }

  FakeClock clock_;  // rendezvous timeouts and the sweeper run on it
  prometheus::Registry registry_;
  RendezvousServiceImpl service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<weft::v1::RendezvousService::Stub> stub_;
};

TEST_F(RendezvousServiceTest, ConcurrentRanksAllGetEveryEndpoint) {
  constexpr int kRanks = 6;
  std::vector<grpc::Status> statuses(kRanks);
  std::vector<weft::v1::RendezvousResponse> responses(kRanks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] {
      statuses[rank] = Call(Request(rank, kRanks, 20000), &responses[rank]);
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << rank << ": " << statuses[rank].error_message();
    ASSERT_EQ(responses[rank].endpoints_size(), kRanks);
    for (int peer = 0; peer < kRanks; ++peer) {
      EXPECT_EQ(responses[rank].endpoints(peer), "endpoint-" + std::to_string(peer));
    }
  }
  EXPECT_EQ(Calls("ok"), kRanks);
  EXPECT_EQ(Calls("timeout"), 0);
}

TEST_F(RendezvousServiceTest, TimeoutArrivesWithinTheSweepPeriodAndNamesTheMissingRank) {
  weft::v1::RendezvousResponse response;
  grpc::Status status;
  std::thread rank0([&] { status = Call(Request(0, 3, 300), &response); });
  std::thread rank1([&] {
    weft::v1::RendezvousResponse r;
    Call(Request(1, 3, 300), &r);
  });
  ASSERT_TRUE(AwaitTableWaiters(2)) << "the two ranks never reached the table";
  // One step short of the timeout nothing ends; the sweep at the timeout ends both.
  clock_.Advance(absl::Milliseconds(299));
  ASSERT_TRUE(clock_.AwaitWaiters(1)) << "the sweeper did not wait again";
  EXPECT_EQ(service_.table().waiter_count(), 2u);
  EXPECT_EQ(Calls("timeout"), 0);
  clock_.Advance(absl::Milliseconds(1));
  rank0.join();
  rank1.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status.error_message().find("rendezvous job 'job-1' key 'weft/tcp': rank 2 never "
                                        "arrived"),
            std::string::npos)
      << status.error_message();
  EXPECT_EQ(Calls("timeout"), 2);
}

TEST_F(RendezvousServiceTest, RefusalsKeepTheirCodeAndMessage) {
  weft::v1::RendezvousResponse response;
  std::thread rank0([&] {
    weft::v1::RendezvousResponse r;
    Call(Request(0, 2, 2000), &r);
  });
  // Let rank 0 open the exchange for 2 ranks.
  ASSERT_TRUE(AwaitTableWaiters(1));
  const grpc::Status conflict = Call(Request(1, 3, 2000), &response);
  EXPECT_EQ(conflict.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(conflict.error_message().find("asked for world size 3 but the exchange was opened "
                                          "for 2 ranks"),
            std::string::npos)
      << conflict.error_message();
  const grpc::Status invalid = Call(Request(5, 2, 2000), &response);
  EXPECT_EQ(invalid.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(Call(Request(1, 2, 2000), &response).ok());
  rank0.join();
  EXPECT_EQ(Calls("conflict"), 1);
  EXPECT_EQ(Calls("invalid"), 1);
  EXPECT_EQ(Calls("ok"), 2);
}

TEST_F(RendezvousServiceTest, ACallerThatGivesUpLeavesTheTable) {
  // The caller gives up only once the server holds its call: a client deadline racing the
  // server's first look at the call (a loaded CI machine) could end it before the table ever
  // saw it. A deadline and TryCancel reach the server the same way, as OnCancel.
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  grpc::Status status;
  std::thread caller([&] {
    weft::v1::RendezvousResponse r;
    status = stub_->Rendezvous(&context, Request(0, 2, 60000), &r);
  });
  ASSERT_TRUE(AwaitTableWaiters(1));
  context.TryCancel();
  caller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // The server side sees the cancellation shortly after.
  for (int i = 0; i < 500 && (service_.table().waiter_count() != 0 || Calls("cancelled") != 1);
       ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(service_.table().waiter_count(), 0u);
  EXPECT_EQ(Calls("cancelled"), 1);
}

TEST_F(RendezvousServiceTest, StopEndsWaitingCallsWithUnavailable) {
  grpc::Status status;
  std::thread rank0([&] {
    weft::v1::RendezvousResponse r;
    status = Call(Request(0, 2, 60000), &r);
  });
  ASSERT_TRUE(AwaitTableWaiters(1));
  service_.Stop();
  rank0.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("shutting down"), std::string::npos);
}

// Under mTLS an agent relays only its own node's ranks: the request's node must be its
// certificate's CN (minted by deploy/pki/mint-dev-pki.sh).
class RendezvousIdentityTest : public RendezvousServiceTest {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    absl::StatusOr<security::TestPki> pki = security::TestPki::Mint(
        std::string(tmp != nullptr ? tmp : "/tmp") + "/pki", {"gpu-a01", "gpu-a02"});
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new security::TestPki(*std::move(pki));
  }

  RendezvousIdentityTest() : RendezvousServiceTest(Verifying()) {
    auto credentials = security::MakeServerCredentials(
        pki_->ServerTls(), std::make_shared<security::AuthProcessor>(nullptr, &clock_, nullptr));
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    if (credentials.ok()) Serve(*credentials);
  }

  static RendezvousServiceOptions Verifying() {
    RendezvousServiceOptions options;
    options.verify_node_identity = true;
    return options;
  }

  // Call() presents the certificate of `cert` from now on.
  void ConnectAs(const std::string& cert) {
    auto credentials = security::MakeChannelCredentials(pki_->ClientTls(cert));
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    Connect(*credentials);
  }

  static security::TestPki* pki_;
};

security::TestPki* RendezvousIdentityTest::pki_ = nullptr;

TEST_F(RendezvousIdentityTest, AnAgentRelaysOnlyItsOwnNodesRanks) {
  ConnectAs("gpu-a01");
  weft::v1::RendezvousRequest request = Request(0, 1, 2000);
  request.set_node("gpu-a02");
  weft::v1::RendezvousResponse response;
  const grpc::Status refused = Call(request, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("rendezvous of job 'job-1' key 'weft/tcp' rank 0: the "
                                         "agent's certificate is for node 'gpu-a01'"),
            std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("tried to act as node 'gpu-a02'"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(service_.table().exchange_count(), 0u);  // never reached the table
  EXPECT_EQ(Calls("denied"), 1);

  request.set_node("gpu-a01");
  const grpc::Status ok = Call(request, &response);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  ASSERT_EQ(response.endpoints_size(), 1);
  EXPECT_EQ(response.endpoints(0), "endpoint-0");
  EXPECT_EQ(Calls("ok"), 1);
}

TEST_F(RendezvousIdentityTest, WithoutACertificateNothingIsRelayed) {
  // The authorization processor refuses the call before the service sees it.
  ConnectAs("");
  weft::v1::RendezvousResponse response;
  EXPECT_EQ(Call(Request(0, 1, 2000), &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(service_.table().exchange_count(), 0u);
}

}  // namespace
}  // namespace weft::controller
