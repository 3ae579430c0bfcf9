// The whole controller in-process: ControllerServer on 127.0.0.1:0 with a FakeClock,
// driven through real gRPC stubs (AgentService, AdminService, PlacementService,
// grpc.health.v1) and a
// real HTTP scrape of /metrics.
#include "controller/server/controller_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/agent.grpc.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"

namespace weft::controller {
namespace {

using weft::v1::AgentMessage;
using weft::v1::ControllerMessage;
using Stream = grpc::ClientReaderWriter<AgentMessage, ControllerMessage>;

// Polls `done` until it holds or 10 s pass; for effects of asynchronous server work
// (stream messages, the ticker thread), not for time-based logic (FakeClock).
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return done();
}

// GET http://<address>/metrics with a plain socket; the body, or "" on failure.
std::string Scrape(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return "";
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = absl::StrCat(
        "GET /metrics HTTP/1.0\r\nHost: ", address, "\r\nConnection: close\r\n\r\n");
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
    }
  }
  ::close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

weft::v1::ControllerConfig TestConfig() {
  weft::v1::ControllerConfig config;
  config.set_listen_address("127.0.0.1:0");
  config.set_metrics_address("127.0.0.1:0");
  config.set_telemetry_interval_ms(100);
  config.set_down_after_intervals(3);
  config.set_window_samples(60);
  return config;
}

weft::v1::NodeInfo MakeNode(const std::string& name) {
  weft::v1::NodeInfo info;
  info.set_name(name);
  info.set_rack("r1");
  for (const char* device : {"mlx5_0", "mlx5_1"}) {
    weft::v1::Nic* nic = info.add_nics();
    nic->set_device(device);
    nic->set_port(1);
  }
  return info;
}

AgentMessage Hello(const std::string& node, uint64_t epoch) {
  AgentMessage message;
  message.mutable_hello()->set_node_name(node);
  message.mutable_hello()->set_session_epoch(epoch);
  return message;
}

// Both NICs send 25 GB/s (200 Gb/s) and 3 retransmissions/s; mlx5_1 also pauses.
AgentMessage Telemetry() {
  AgentMessage message;
  for (const char* device : {"mlx5_0", "mlx5_1"}) {
    weft::v1::NicSample* sample = message.mutable_telemetry()->add_samples();
    sample->set_device(device);
    sample->set_port(1);
    sample->set_rates_valid(true);
    sample->mutable_port_counters()->mutable_xmit_bytes()->set_per_second(25e9);
    sample->mutable_port_counters()->mutable_rcv_bytes()->set_per_second(12.5e9);
    sample->mutable_retransmission()->mutable_out_of_sequence()->set_per_second(3);
  }
  auto* pfc = message.mutable_telemetry()->mutable_samples(1)->add_pfc();
  pfc->set_priority(3);
  pfc->mutable_rx_pause_duration_us()->set_per_second(400);
  pfc->mutable_tx_pause_duration_us()->set_per_second(100);
  return message;
}

grpc::Status EndOf(Stream& stream) {
  ControllerMessage ignored;
  while (stream.Read(&ignored)) {
  }
  return stream.Finish();
}

class ControllerServerTest : public ::testing::Test {
 protected:
  ControllerServerTest()
      : registry_(std::make_shared<prometheus::Registry>()),
        server_(*ControllerServer::Create(TestConfig(), &clock_, registry_)) {}

  void SetUp() override {
    ASSERT_TRUE(server_->Start().ok());
    auto channel = grpc::CreateChannel(server_->listen_address(),
                                       grpc::InsecureChannelCredentials());
    agent_ = weft::v1::AgentService::NewStub(channel);
    admin_ = weft::v1::AdminService::NewStub(channel);
    health_ = grpc::health::v1::Health::NewStub(channel);
  }

  uint64_t Register(const std::string& name, uint64_t last_epoch) {
    grpc::ClientContext context;
    weft::v1::RegisterRequest request;
    *request.mutable_node() = MakeNode(name);
    request.set_last_session_epoch(last_epoch);
    weft::v1::RegisterResponse response;
    grpc::Status status = agent_->Register(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.telemetry_interval_ms(), 100u);
    return response.session_epoch();
  }

  struct Session {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    std::unique_ptr<Stream> stream;
  };

  Session Connect(const std::string& node, uint64_t epoch) {
    Session session;
    session.context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    session.stream = agent_->Connect(session.context.get());
    EXPECT_TRUE(session.stream->Write(Hello(node, epoch)));
    return session;
  }

  absl::StatusOr<weft::v1::NodeStatus> GetNode(const std::string& name) {
    grpc::ClientContext context;
    weft::v1::GetNodeRequest request;
    request.set_name(name);
    weft::v1::GetNodeResponse response;
    grpc::Status status = admin_->GetNode(&context, request, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    return response.node();
  }

  double Metric(const std::string& name,
                const std::map<std::string, std::string>& labels = {}) {
    return MetricValue(*registry_, name, labels).value_or(-1);
  }

  // Moves the FakeClock and returns once the tickers (the controller's and pingmesh's)
  // and the rendezvous sweeper (the threads that wait on it) have run every tick that
  // came due and wait again.
  void Advance(absl::Duration d) {
    clock_.Advance(d);
    ASSERT_TRUE(clock_.AwaitWaiters(kClockThreads)) << "tickers and sweeper did not wait again";
  }
  static constexpr size_t kClockThreads = 3;

  FakeClock clock_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<ControllerServer> server_;
  std::unique_ptr<weft::v1::AgentService::Stub> agent_;
  std::unique_ptr<weft::v1::AdminService::Stub> admin_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

TEST_F(ControllerServerTest, BindsPortZeroAndReportsTheBoundAddresses) {
  EXPECT_GT(server_->grpc_port(), 0);
  EXPECT_EQ(server_->listen_address(), absl::StrCat("127.0.0.1:", server_->grpc_port()));
  EXPECT_NE(server_->metrics_address(), "127.0.0.1:0");
  EXPECT_EQ(server_->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ControllerServerTest, HealthIsServing) {
  for (const char* service : {"", "weft.v1.AgentService", "weft.v1.AdminService"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health_->Check(&context, request, &response).ok()) << service;
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(ControllerServerTest, FencingTelemetryAndDrainOverTheWire) {
  ASSERT_EQ(Register("n1", 0), 1u);
  Session old_session = Connect("n1", 1);
  ASSERT_TRUE(old_session.stream->Write(Telemetry()));
  ASSERT_TRUE(Eventually([&] { return Metric("weft_controller_telemetry_batches_total") == 1; }));

  // A second session of the same node fences the first: its stream ends at once.
  ASSERT_EQ(Register("n1", 1), 2u);
  grpc::Status fenced = EndOf(*old_session.stream);
  EXPECT_EQ(fenced.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(fenced.error_message(), "session 1 of node n1 was superseded by session 2");

  Session session = Connect("n1", 2);
  ASSERT_TRUE(session.stream->Write(Telemetry()));
  ASSERT_TRUE(Eventually([&] { return Metric("weft_controller_telemetry_batches_total") == 2; }));

  grpc::ClientContext list_context;
  weft::v1::ListNodesResponse list;
  ASSERT_TRUE(admin_->ListNodes(&list_context, weft::v1::ListNodesRequest(), &list).ok());
  ASSERT_EQ(list.nodes_size(), 1);
  const weft::v1::NodeStatus& node = list.nodes(0);
  EXPECT_EQ(node.session_epoch(), 2u);
  EXPECT_EQ(node.state(), weft::v1::NODE_STATE_HEALTHY);
  EXPECT_TRUE(node.reporting());
  EXPECT_DOUBLE_EQ(node.rates().tx_gbps(), 400.0);
  EXPECT_DOUBLE_EQ(node.rates().rx_gbps(), 200.0);
  EXPECT_DOUBLE_EQ(node.rates().pfc_pause_us_per_s(), 500.0);
  EXPECT_DOUBLE_EQ(node.rates().retransmissions_per_s(), 6.0);
  ASSERT_EQ(node.nics_size(), 2);
  EXPECT_EQ(node.nics(1).latest().pfc_size(), 1);

  {
    grpc::ClientContext context;
    weft::v1::DrainNodeRequest request;
    request.set_name("n1");
    request.set_reason("maintenance");
    weft::v1::DrainNodeResponse response;
    ASSERT_TRUE(admin_->DrainNode(&context, request, &response).ok());
    EXPECT_EQ(response.node().state(), weft::v1::NODE_STATE_DRAINED);
  }
  {
    grpc::ClientContext context;
    weft::v1::DrainNodeRequest request;
    request.set_name("n9");
    weft::v1::DrainNodeResponse response;
    grpc::Status status = admin_->DrainNode(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(status.error_message(), "node n9 is not registered");
  }
  EXPECT_EQ(GetNode("n1")->drain_reason(), "maintenance");
  {
    grpc::ClientContext context;
    weft::v1::UndrainNodeRequest request;
    request.set_name("n1");
    weft::v1::UndrainNodeResponse response;
    ASSERT_TRUE(admin_->UndrainNode(&context, request, &response).ok());
    EXPECT_EQ(response.node().state(), weft::v1::NODE_STATE_HEALTHY);
  }
  {
    grpc::ClientContext context;
    weft::v1::UndrainNodeRequest request;
    request.set_name("n1");
    weft::v1::UndrainNodeResponse response;
    EXPECT_EQ(admin_->UndrainNode(&context, request, &response).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }

  // The same events, as a scrape and in-process.
  EXPECT_EQ(Metric("weft_controller_registrations_total"), 2);
  EXPECT_EQ(Metric("weft_controller_sessions_fenced_total"), 1);
  EXPECT_EQ(Metric("weft_controller_telemetry_samples_total"), 4);
  EXPECT_EQ(Metric("weft_controller_drains_total"), 1);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "healthy"}}), 1);
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "drained"}}), 1);
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "healthy"}}), 1);
  EXPECT_TRUE(Eventually([&] { return Metric("weft_controller_agent_streams") == 1; }));
  const std::string scraped = Scrape(server_->metrics_address());
  EXPECT_NE(scraped.find("weft_controller_sessions_fenced_total 1"), std::string::npos)
      << scraped;
  EXPECT_NE(scraped.find("weft_controller_nodes{state=\"healthy\"} 1"), std::string::npos);
  EXPECT_NE(scraped.find("weft_controller_agent_streams 1"), std::string::npos);
}

TEST_F(ControllerServerTest, TickerMarksSilentNodesDownAndTelemetryRevivesThem) {
  ASSERT_EQ(Register("n1", 0), 1u);
  Session session = Connect("n1", 1);
  ASSERT_TRUE(session.stream->Write(Telemetry()));
  ASSERT_TRUE(Eventually([&] { return Metric("weft_controller_telemetry_batches_total") == 1; }));

  // 3 × 100 ms is the threshold; the ticker runs every 25 ms of the FakeClock.
  for (int tick = 1; tick <= 12; ++tick) {
    Advance(absl::Milliseconds(25));
    ASSERT_EQ(GetNode("n1")->state(), weft::v1::NODE_STATE_HEALTHY) << "tick " << tick;
  }
  // Past the threshold, but only a tick judges it.
  Advance(absl::Milliseconds(1));
  EXPECT_EQ(GetNode("n1")->state(), weft::v1::NODE_STATE_HEALTHY);
  Advance(absl::Milliseconds(24));
  EXPECT_EQ(GetNode("n1")->state(), weft::v1::NODE_STATE_DOWN);
  auto down = GetNode("n1");
  EXPECT_FALSE(down->reporting());
  EXPECT_EQ(down->rates().tx_gbps(), 0);
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "down"}}), 1);

  ASSERT_TRUE(session.stream->Write(Telemetry()));
  ASSERT_TRUE(Eventually(
      [&] { return GetNode("n1")->state() == weft::v1::NODE_STATE_HEALTHY; }));
  EXPECT_DOUBLE_EQ(GetNode("n1")->rates().tx_gbps(), 400.0);
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "down"}}), 1);
  EXPECT_EQ(Metric("weft_controller_node_state_changes_total", {{"to", "healthy"}}), 1);
}

// A PFC storm on mlx5_0, end to end: telemetry over the agent stream, the ticker's
// sweeps on the FakeClock, and what operators see through AdminService and /metrics.
TEST_F(ControllerServerTest, PfcStormDegradesTheNodeOverTheWire) {
  ASSERT_EQ(Register("n1", 0), 1u);
  Session session = Connect("n1", 1);
  auto send = [&](double pause_share, int batches_so_far) {
    AgentMessage message = Telemetry();
    auto* pfc = message.mutable_telemetry()->mutable_samples(0)->add_pfc();
    pfc->set_priority(3);
    pfc->mutable_tx_pause_duration_us()->set_per_second(pause_share * 1e6);
    ASSERT_TRUE(session.stream->Write(message));
    ASSERT_TRUE(Eventually([&] {
      return Metric("weft_controller_telemetry_batches_total") == batches_so_far + 1;
    }));
  };
  // Agents report every 100 ms (the test config's interval): 0.5 s quiet, then storm.
  int batches = 0;
  for (int i = 0; i < 5; ++i) {
    send(0.0, batches++);
    Advance(absl::Milliseconds(100));
  }
  const absl::Time storm_start = clock_.Now();
  send(0.9, batches++);
  // The rule fires on the second stormy sample; the node turns DEGRADED 2 s (the
  // default degrade_after) after the first.
  for (int i = 0; i < 19; ++i) {
    Advance(absl::Milliseconds(100));
    send(0.9, batches++);
  }
  // The three ticks still before the 2 s must not degrade it.
  Advance(absl::Milliseconds(75));
  auto before = GetNode("n1");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->state(), weft::v1::NODE_STATE_HEALTHY);
  ASSERT_EQ(before->findings_size(), 1);
  EXPECT_EQ(before->findings(0).rule(), "pfc_pause_storm");
  EXPECT_EQ(before->findings(0).device(), "mlx5_0");
  EXPECT_DOUBLE_EQ(before->findings(0).value(), 0.9);
  EXPECT_EQ(before->findings(0).since_us(), absl::ToUnixMicros(storm_start));

  Advance(absl::Milliseconds(25));
  send(0.9, batches++);
  ASSERT_TRUE(Eventually(
      [&] { return GetNode("n1")->state() == weft::v1::NODE_STATE_DEGRADED; }));
  EXPECT_EQ(GetNode("n1")->health(), weft::v1::NODE_STATE_DEGRADED);

  {
    grpc::ClientContext context;
    weft::v1::ListEventsRequest request;
    request.set_node("n1");
    weft::v1::ListEventsResponse events;
    ASSERT_TRUE(admin_->ListEvents(&context, request, &events).ok());
    ASSERT_EQ(events.events_size(), 3);
    EXPECT_EQ(events.events(0).kind(), weft::v1::EVENT_KIND_REGISTERED);
    EXPECT_EQ(events.events(1).kind(), weft::v1::EVENT_KIND_RULE_FIRED);
    EXPECT_DOUBLE_EQ(events.events(1).finding().threshold(), 0.5);
    EXPECT_EQ(events.events(2).kind(), weft::v1::EVENT_KIND_STATE_CHANGED);
    EXPECT_EQ(events.events(2).to_state(), weft::v1::NODE_STATE_DEGRADED);
    EXPECT_EQ(events.events(2).time_us(),
              absl::ToUnixMicros(storm_start + absl::Seconds(2)));
  }
  {
    grpc::ClientContext context;
    weft::v1::ListRacksResponse racks;
    ASSERT_TRUE(admin_->ListRacks(&context, weft::v1::ListRacksRequest(), &racks).ok());
    ASSERT_EQ(racks.racks_size(), 1);
    EXPECT_EQ(racks.racks(0).rack(), "r1");
    EXPECT_EQ(racks.racks(0).nodes().degraded(), 1u);
    EXPECT_DOUBLE_EQ(racks.racks(0).rates().tx_gbps(), 400.0);
  }
  EXPECT_EQ(Metric("weft_controller_nodes", {{"state", "degraded"}}), 1);
  const std::string scraped = Scrape(server_->metrics_address());
  EXPECT_NE(scraped.find("weft_controller_health_rule_firings_total{rule=\"pfc_pause_storm\"} 1"),
            std::string::npos)
      << scraped;
  EXPECT_NE(scraped.find("weft_controller_nodes{state=\"degraded\"} 1"), std::string::npos);
  EXPECT_TRUE(Eventually([&] {
    return Scrape(server_->metrics_address())
               .find("weft_rack_nodes{pod=\"\",rack=\"r1\",state=\"degraded\"} 1") !=
           std::string::npos;
  })) << Scrape(server_->metrics_address());
  EXPECT_NE(scraped.find("weft_rack_tx_bytes_per_second{pod=\"\",rack=\"r1\"} 50000000000"),
            std::string::npos);
}

TEST_F(ControllerServerTest, StopEndsAgentStreamsWithUnavailable) {
  ASSERT_EQ(Register("n1", 0), 1u);
  Session session = Connect("n1", 1);
  ASSERT_TRUE(session.stream->Write(Telemetry()));
  ASSERT_TRUE(Eventually([&] { return Metric("weft_controller_telemetry_batches_total") == 1; }));
  server_->Stop();
  grpc::Status status = EndOf(*session.stream);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Metric("weft_controller_agent_streams"), 0);
  server_->Stop();  // idempotent
}

TEST_F(ControllerServerTest, ServesPlacementAndTheTickerExpiresLeasesFromTheGauges) {
  for (const char* name : {"n1", "n2"}) {
    weft::v1::NodeInfo info = MakeNode(name);
    for (int g = 0; g < 8; ++g) info.add_gpus()->set_index(g);
    ASSERT_TRUE(server_->inventory().Register(info, 0).ok());
  }
  {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service("weft.v1.PlacementService");
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health_->Check(&context, request, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  auto placement = weft::v1::PlacementService::NewStub(
      grpc::CreateChannel(server_->listen_address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  weft::v1::PlacementRequest request;
  request.set_job_id("job-1");
  request.set_node_count(2);
  request.set_lease_ttl_s(60);
  weft::v1::PlacementResponse placed;
  grpc::Status status = placement->Place(&context, request, &placed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(placed.ring_order_size(), 2);
  EXPECT_EQ(Metric("weft_controller_placements_total", {{"result", "placed"}}), 1);
  EXPECT_EQ(Metric("weft_controller_reserved_nodes"), 2);

  // No call after this: the ticker alone notices the lease ran out.
  Advance(absl::Seconds(61));
  EXPECT_EQ(Metric("weft_controller_reservations"), 0);
  EXPECT_EQ(Metric("weft_controller_reserved_nodes"), 0);
}

TEST(ControllerServerStartTest, BusyPortIsUnavailable) {
  FakeClock clock;
  std::unique_ptr<ControllerServer> first =
      *ControllerServer::Create(TestConfig(), &clock, std::make_shared<prometheus::Registry>());
  ASSERT_TRUE(first->Start().ok());
  weft::v1::ControllerConfig config = TestConfig();
  config.set_listen_address(first->listen_address());
  std::unique_ptr<ControllerServer> second =
      *ControllerServer::Create(config, &clock, std::make_shared<prometheus::Registry>());
  absl::Status status = second->Start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find(first->listen_address()), std::string::npos);
}

TEST(ControllerServerStartTest, ZeroIntervalIsRefused) {
  FakeClock clock;
  weft::v1::ControllerConfig config = TestConfig();
  config.set_telemetry_interval_ms(0);
  EXPECT_EQ(ControllerServer::Create(config, &clock, std::make_shared<prometheus::Registry>())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::controller
