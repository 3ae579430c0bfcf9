// AdminServiceImpl over a real in-process gRPC server on 127.0.0.1:0: each RPC maps
// to the Inventory and its errors arrive with the right code and message.
#include "controller/api/admin_service.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "security/credentials.h"
#include "security/server_auth.h"
#include "security/test_pki.h"

namespace weft::controller {
namespace {

weft::v1::NodeInfo MakeNode(const std::string& name, const std::string& rack) {
  weft::v1::NodeInfo info;
  info.set_name(name);
  info.set_rack(rack);
  weft::v1::Nic* nic = info.add_nics();
  nic->set_device("mlx5_0");
  nic->set_port(1);
  return info;
}

class AdminServiceTest : public ::testing::Test {
 protected:
  AdminServiceTest() : AdminServiceTest(grpc::InsecureServerCredentials()) {
    Connect(grpc::InsecureChannelCredentials());
  }
  // Serves with `credentials`; call Connect.
  explicit AdminServiceTest(std::shared_ptr<grpc::ServerCredentials> credentials)
      : metrics_(registry_), inventory_(&clock_, InventoryOptions{}, &metrics_),
        service_(&inventory_, &audit_, &clock_) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_TRUE(inventory_.Register(MakeNode("n2", "r2"), 0).ok());
    EXPECT_TRUE(inventory_.Register(MakeNode("n1", "r1"), 0).ok());
    EXPECT_TRUE(inventory_.Register(MakeNode("n3", "r1"), 0).ok());
  }

  ~AdminServiceTest() override { server_->Shutdown(); }

  // The stub talks over a channel with `credentials` from now on.
  void Connect(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    stub_ = weft::v1::AdminService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), credentials));
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_;
  Inventory inventory_;
  AuditLog audit_{nullptr};
  AdminServiceImpl service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<weft::v1::AdminService::Stub> stub_;
};

TEST_F(AdminServiceTest, ListNodesSortedAndByRack) {
  {
    grpc::ClientContext context;
    weft::v1::ListNodesResponse response;
    ASSERT_TRUE(stub_->ListNodes(&context, weft::v1::ListNodesRequest(), &response).ok());
    ASSERT_EQ(response.nodes_size(), 3);
    EXPECT_EQ(response.nodes(0).info().name(), "n1");
    EXPECT_EQ(response.nodes(2).info().name(), "n3");
    EXPECT_EQ(response.nodes(0).state(), weft::v1::NODE_STATE_HEALTHY);
    EXPECT_EQ(response.nodes(0).session_epoch(), 1u);
  }
  grpc::ClientContext context;
  weft::v1::ListNodesRequest request;
  request.set_rack("r1");
  weft::v1::ListNodesResponse response;
  ASSERT_TRUE(stub_->ListNodes(&context, request, &response).ok());
  ASSERT_EQ(response.nodes_size(), 2);
  EXPECT_EQ(response.nodes(0).info().name(), "n1");
  EXPECT_EQ(response.nodes(1).info().name(), "n3");
}

TEST_F(AdminServiceTest, GetNode) {
  {
    grpc::ClientContext context;
    weft::v1::GetNodeRequest request;
    request.set_name("n2");
    weft::v1::GetNodeResponse response;
    ASSERT_TRUE(stub_->GetNode(&context, request, &response).ok());
    EXPECT_EQ(response.node().info().rack(), "r2");
    EXPECT_EQ(response.node().nics_size(), 1);
  }
  {
    grpc::ClientContext context;
    weft::v1::GetNodeRequest request;
    request.set_name("ghost");
    weft::v1::GetNodeResponse response;
    grpc::Status status = stub_->GetNode(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "node ghost is not registered");
  }
  grpc::ClientContext context;
  weft::v1::GetNodeResponse response;
  EXPECT_EQ(stub_->GetNode(&context, weft::v1::GetNodeRequest(), &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(AdminServiceTest, DrainAndUndrain) {
  {
    grpc::ClientContext context;
    weft::v1::UndrainNodeRequest request;
    request.set_name("n1");
    weft::v1::UndrainNodeResponse response;
    grpc::Status status = stub_->UndrainNode(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(status.error_message().find("n1 is not drained"), std::string::npos);
  }
  {
    grpc::ClientContext context;
    weft::v1::DrainNodeRequest request;
    request.set_name("n1");
    request.set_reason("swap NIC");
    weft::v1::DrainNodeResponse response;
    ASSERT_TRUE(stub_->DrainNode(&context, request, &response).ok());
    EXPECT_EQ(response.node().state(), weft::v1::NODE_STATE_DRAINED);
    EXPECT_EQ(response.node().drain_reason(), "swap NIC");
    // A plaintext listener authenticates no one.
    EXPECT_EQ(response.node().drained_who(), "anonymous");
  }
  {
    grpc::ClientContext context;
    weft::v1::DrainNodeRequest request;
    request.set_name("ghost");
    weft::v1::DrainNodeResponse response;
    grpc::Status status = stub_->DrainNode(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_NE(status.error_message().find("ghost"), std::string::npos);
  }
  {
    grpc::ClientContext context;
    weft::v1::UndrainNodeRequest request;
    request.set_name("ghost");
    weft::v1::UndrainNodeResponse response;
    EXPECT_EQ(stub_->UndrainNode(&context, request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(inventory_.GetNode("n1")->state(), weft::v1::NODE_STATE_DRAINED);
  grpc::ClientContext context;
  weft::v1::UndrainNodeRequest request;
  request.set_name("n1");
  weft::v1::UndrainNodeResponse response;
  ASSERT_TRUE(stub_->UndrainNode(&context, request, &response).ok());
  EXPECT_EQ(response.node().state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_EQ(response.node().drain_reason(), "");
}

TEST_F(AdminServiceTest, ListEventsFiltersAndRejectsANegativeSince) {
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(inventory_.Drain("n1", "bad cable").ok());
  {
    grpc::ClientContext context;
    weft::v1::ListEventsRequest request;
    request.set_node("n1");
    weft::v1::ListEventsResponse response;
    ASSERT_TRUE(stub_->ListEvents(&context, request, &response).ok());
    ASSERT_EQ(response.events_size(), 2);
    EXPECT_EQ(response.events(0).kind(), weft::v1::EVENT_KIND_REGISTERED);
    EXPECT_EQ(response.events(1).kind(), weft::v1::EVENT_KIND_DRAINED);
    EXPECT_EQ(response.events(1).drained_by(), weft::v1::DRAIN_SOURCE_OPERATOR);
    EXPECT_EQ(response.events(1).message(), "bad cable");
    EXPECT_EQ(response.events(1).time_us(), absl::ToUnixMicros(clock_.Now()));
    EXPECT_GT(response.events(1).sequence(), response.events(0).sequence());
    EXPECT_EQ(response.capacity(), 10000u);
    EXPECT_FALSE(response.truncated());
  }
  {
    grpc::ClientContext context;
    weft::v1::ListEventsRequest request;
    request.set_within_ms(5000);  // by the controller's clock: only the drain
    weft::v1::ListEventsResponse response;
    ASSERT_TRUE(stub_->ListEvents(&context, request, &response).ok());
    ASSERT_EQ(response.events_size(), 1);
    EXPECT_EQ(response.events(0).node(), "n1");
  }
  grpc::ClientContext context;
  weft::v1::ListEventsRequest request;
  request.set_since_us(-1);
  weft::v1::ListEventsResponse response;
  grpc::Status status = stub_->ListEvents(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("since_us -1"), std::string::npos);
}

TEST_F(AdminServiceTest, ListRacksCountsNodesPerRack) {
  ASSERT_TRUE(inventory_.Drain("n3", "x").ok());
  grpc::ClientContext context;
  weft::v1::ListRacksResponse response;
  ASSERT_TRUE(stub_->ListRacks(&context, weft::v1::ListRacksRequest(), &response).ok());
  ASSERT_EQ(response.racks_size(), 2);
  EXPECT_EQ(response.racks(0).rack(), "r1");
  EXPECT_EQ(response.racks(0).nodes().total(), 2u);
  EXPECT_EQ(response.racks(0).nodes().healthy(), 1u);
  EXPECT_EQ(response.racks(0).nodes().drained(), 1u);
  EXPECT_EQ(response.racks(1).rack(), "r2");
  ASSERT_EQ(response.pods_size(), 1);
  EXPECT_EQ(response.pods(0).racks(), 2u);
  EXPECT_EQ(response.pods(0).nodes().total(), 3u);

  grpc::ClientContext filtered_context;
  weft::v1::ListRacksRequest filtered;
  filtered.set_pod("elsewhere");
  weft::v1::ListRacksResponse none;
  ASSERT_TRUE(stub_->ListRacks(&filtered_context, filtered, &none).ok());
  EXPECT_EQ(none.racks_size(), 0);
}

TEST_F(AdminServiceTest, ListAuditFiltersByWindowWhoAndMethod) {
  AuditEntry entry;
  entry.at = clock_.Now() - absl::Minutes(10);
  entry.who = "alice";
  entry.role = "operator";
  entry.method = "/weft.v1.AdminService/DrainNode";
  entry.target = "n1";
  entry.result = "OK";
  ASSERT_TRUE(audit_.Record(entry).ok());
  entry.at = clock_.Now() - absl::Seconds(5);
  entry.who = "bob";
  entry.method = "/weft.v1.PlacementService/Place";
  entry.target = "job-1";
  ASSERT_TRUE(audit_.Record(entry).ok());

  weft::v1::ListAuditRequest request;
  request.set_within_ms(60'000);  // by the controller's (fake) clock: only bob's
  weft::v1::ListAuditResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ListAudit(&context, request, &response).ok());
  }
  ASSERT_EQ(response.entries_size(), 1);
  EXPECT_EQ(response.entries(0).who(), "bob");
  EXPECT_EQ(response.entries(0).target(), "job-1");
  EXPECT_EQ(response.entries(0).time_us(), absl::ToUnixMicros(entry.at));
  EXPECT_EQ(response.entries(0).sequence(), 2u);

  request.Clear();
  request.set_method("DrainNode");
  response.Clear();
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ListAudit(&context, request, &response).ok());
  }
  ASSERT_EQ(response.entries_size(), 1);
  EXPECT_EQ(response.entries(0).who(), "alice");

  request.Clear();
  request.set_since_us(-1);
  grpc::ClientContext context;
  const grpc::Status bad = stub_->ListAudit(&context, request, &response);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.error_message().find("since_us -1"), std::string::npos);
}

// Under mTLS a drain is recorded under the caller's certificate CN or token name.
class AdminIdentityTest : public AdminServiceTest {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    absl::StatusOr<security::TestPki> pki =
        security::TestPki::Mint(std::string(tmp != nullptr ? tmp : "/tmp") + "/pki");
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new security::TestPki(*std::move(pki));
  }

  AdminIdentityTest() : AdminServiceTest(ServerCredentials()) {}

  static std::shared_ptr<grpc::ServerCredentials> ServerCredentials() {
    static RealClock clock;
    auto credentials = security::MakeServerCredentials(
        pki_->ServerTls(), std::make_shared<security::AuthProcessor>(pki_->Tokens(), &clock,
                                                                      nullptr));
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    return credentials.ok() ? *credentials : grpc::InsecureServerCredentials();
  }

  // Connects presenting `cert` ("" none) and, when `token_role` is set, that role's token.
  void ConnectAs(const std::string& cert, const std::string& token_role = "") {
    auto credentials = security::MakeChannelCredentials(
        pki_->ClientTls(cert), token_role.empty() ? "" : pki_->Token(token_role));
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    Connect(*credentials);
  }

  grpc::Status Drain(const std::string& node) {
    grpc::ClientContext context;
    weft::v1::DrainNodeRequest request;
    request.set_name(node);
    request.set_reason("optics");
    weft::v1::DrainNodeResponse response;
    return stub_->DrainNode(&context, request, &response);
  }

  grpc::Status Undrain(const std::string& node) {
    grpc::ClientContext context;
    weft::v1::UndrainNodeRequest request;
    request.set_name(node);
    weft::v1::UndrainNodeResponse response;
    return stub_->UndrainNode(&context, request, &response);
  }

  // The newest event of `node`.
  weft::v1::Event LastEvent(const std::string& node) {
    weft::v1::ListEventsRequest request;
    request.set_node(node);
    weft::v1::ListEventsResponse events = inventory_.ListEvents(request);
    return events.events().empty() ? weft::v1::Event() : *events.events().rbegin();
  }

  static security::TestPki* pki_;
};

security::TestPki* AdminIdentityTest::pki_ = nullptr;

TEST_F(AdminServiceTest, APlaintextCallIsAnonymousWhateverItsHeadersClaim) {
  grpc::ClientContext context;
  // Nothing is authenticated without TLS: neither a bearer token nor headers named like
  // the auth context's caller properties name the caller.
  context.AddMetadata("authorization", "Bearer some-token");
  context.AddMetadata("weft.caller.name", "mallory");
  context.AddMetadata("weft.caller.role", "admin");
  weft::v1::DrainNodeRequest request;
  request.set_name("n1");
  weft::v1::DrainNodeResponse response;
  ASSERT_TRUE(stub_->DrainNode(&context, request, &response).ok());
  EXPECT_EQ(response.node().drained_who(), "anonymous");
}

TEST_F(AdminIdentityTest, DrainAndUndrainRecordTheCertificatesName) {
  ConnectAs("operator");
  ASSERT_TRUE(Drain("n1").ok());
  EXPECT_EQ(inventory_.GetNode("n1")->drained_who(), "dev-operator");
  EXPECT_EQ(LastEvent("n1").who(), "dev-operator");
  ConnectAs("admin");
  ASSERT_TRUE(Undrain("n1").ok());
  const weft::v1::Event undrained = LastEvent("n1");
  EXPECT_EQ(undrained.kind(), weft::v1::EVENT_KIND_UNDRAINED);
  EXPECT_EQ(undrained.who(), "dev-admin");
  EXPECT_EQ(inventory_.GetNode("n1")->drained_who(), "");
}

TEST_F(AdminIdentityTest, ATokenNamesItsHolderOverTheConnectionsCertificate) {
  ConnectAs("operator", "admin");
  ASSERT_TRUE(Drain("n2").ok());
  EXPECT_EQ(inventory_.GetNode("n2")->drained_who(), "dev-admin");
  // A viewer never gets to the handler.
  ConnectAs("viewer");
  EXPECT_EQ(Drain("n3").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(inventory_.GetNode("n3")->state(), weft::v1::NODE_STATE_HEALTHY);
}

}  // namespace
}  // namespace weft::controller
