// AgentServiceImpl over a real in-process gRPC server on 127.0.0.1:0, driven through
// the generated client stub: the stream protocol, fencing, the write path and the
// metrics the service records.
#include "controller/api/agent_service.h"

#include <functional>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/event_log.h"
#include "controller/inventory/inventory.h"
#include "controller/pingmesh/pingmesh_manager.h"
#include "controller/pingmesh/pingmesh_metrics.h"
#include "common/testing/metrics.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/agent.grpc.pb.h"

namespace weft::controller {
namespace {

using weft::v1::AgentMessage;
using weft::v1::ControllerMessage;
using Stream = grpc::ClientReaderWriter<AgentMessage, ControllerMessage>;

// Polls `done` until it holds or 10 s pass; for effects of asynchronous server work,
// not for time-based logic (that runs on the FakeClock).
bool Eventually(const std::function<bool()>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return done();
}

weft::v1::NodeInfo MakeNode(const std::string& name) {
  weft::v1::NodeInfo info;
  info.set_name(name);
  weft::v1::Nic* nic = info.add_nics();
  nic->set_device("mlx5_0");
  nic->set_port(1);
  return info;
}

AgentMessage Hello(const std::string& node, uint64_t epoch) {
  AgentMessage message;
  message.mutable_hello()->set_node_name(node);
  message.mutable_hello()->set_session_epoch(epoch);
  return message;
}

AgentMessage Telemetry(double tx_bytes_per_s) {
  AgentMessage message;
  weft::v1::NicSample* sample = message.mutable_telemetry()->add_samples();
  sample->set_device("mlx5_0");
  sample->set_port(1);
  sample->set_rates_valid(true);
  sample->mutable_port_counters()->mutable_xmit_bytes()->set_per_second(tx_bytes_per_s);
  return message;
}

// Writes nothing more, then reads until the server ends the stream; its status.
grpc::Status EndOf(Stream& stream) {
  ControllerMessage ignored;
  while (stream.Read(&ignored)) {
  }
  return stream.Finish();
}

class AgentServiceTest : public ::testing::Test {
 protected:
  AgentServiceTest()
      : metrics_(registry_),
        inventory_(&clock_, InventoryOptions{}, &metrics_),
        pingmesh_metrics_(registry_),
        pingmesh_(
            &clock_, [] { return std::vector<weft::v1::NodeStatus>(); },
            [](const std::string&, ControllerMessage) { return absl::OkStatus(); },
            &events_, &pingmesh_metrics_, PingmeshManagerOptions{}),
        service_(&inventory_, &metrics_, AgentServiceOptions{250, "test-version"},
                 /*listener=*/nullptr, &pingmesh_) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    stub_ = weft::v1::AgentService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials()));
  }

  ~AgentServiceTest() override {
    service_.FinishAllStreams(absl::UnavailableError("test over"));
    server_->Shutdown();
  }

  absl::StatusOr<uint64_t> Register(const std::string& name, uint64_t last_epoch = 0) {
    grpc::ClientContext context;
    weft::v1::RegisterRequest request;
    *request.mutable_node() = MakeNode(name);
    request.set_last_session_epoch(last_epoch);
    weft::v1::RegisterResponse response;
    grpc::Status status = stub_->Register(&context, request, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    return response.session_epoch();
  }

  struct Session {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    std::unique_ptr<Stream> stream;
  };

  Session Open() {
    Session session;
    // A stream the server should have ended fails the test instead of hanging it.
    session.context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    session.stream = stub_->Connect(session.context.get());
    return session;
  }

  // Opens a stream, says hello and waits until a telemetry batch on it was accepted
  // (which proves the hello attached, since a stream is handled in order).
  Session OpenAttached(const std::string& node, uint64_t epoch) {
    Session session = Open();
    const double before = Metric("weft_controller_telemetry_batches_total");
    EXPECT_TRUE(session.stream->Write(Hello(node, epoch)));
    EXPECT_TRUE(session.stream->Write(Telemetry(1e9)));
    EXPECT_TRUE(Eventually(
        [&] { return Metric("weft_controller_telemetry_batches_total") > before; }));
    return session;
  }

  double Metric(const std::string& name,
                const std::map<std::string, std::string>& labels = {}) {
    return MetricValue(registry_, name, labels).value_or(-1);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics metrics_;
  Inventory inventory_;
  EventLog events_{100};
  PingmeshMetrics pingmesh_metrics_;
  PingmeshManager pingmesh_;
  AgentServiceImpl service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<weft::v1::AgentService::Stub> stub_;
};

TEST_F(AgentServiceTest, RegisterAnswersEpochIntervalAndVersion) {
  grpc::ClientContext context;
  weft::v1::RegisterRequest request;
  *request.mutable_node() = MakeNode("n1");
  request.set_last_session_epoch(7);
  weft::v1::RegisterResponse response;
  ASSERT_TRUE(stub_->Register(&context, request, &response).ok());
  EXPECT_EQ(response.session_epoch(), 8u);
  EXPECT_EQ(response.telemetry_interval_ms(), 250u);
  EXPECT_EQ(response.controller_version(), "test-version");
}

TEST_F(AgentServiceTest, RegisterRejectsANodeWithoutNics) {
  grpc::ClientContext context;
  weft::v1::RegisterRequest request;
  request.mutable_node()->set_name("n1");
  weft::v1::RegisterResponse response;
  grpc::Status status = stub_->Register(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("node n1 reports no RDMA NICs"), std::string::npos);
}

TEST_F(AgentServiceTest, FirstMessageMustBeHello) {
  Session session = Open();
  ASSERT_TRUE(session.stream->Write(Telemetry(1e9)));
  grpc::Status status = EndOf(*session.stream);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("first message on a Connect stream must be a "
                                        "StreamHello"),
            std::string::npos);
  EXPECT_EQ(Metric("weft_controller_streams_rejected_total", {{"reason", "no_hello"}}), 1);
  EXPECT_EQ(Metric("weft_controller_telemetry_rejected_total", {{"reason", "no_hello"}}), 1);
}

TEST_F(AgentServiceTest, HelloForUnknownNodeFailsPrecondition) {
  Session session = Open();
  ASSERT_TRUE(session.stream->Write(Hello("ghost", 1)));
  grpc::Status status = EndOf(*session.stream);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("node ghost is not registered"), std::string::npos);
  EXPECT_EQ(Metric("weft_controller_streams_rejected_total", {{"reason", "unknown_node"}}),
            1);
}

TEST_F(AgentServiceTest, SecondHelloIsAProtocolError) {
  ASSERT_TRUE(Register("n1").ok());
  Session session = OpenAttached("n1", 1);
  ASSERT_TRUE(session.stream->Write(Hello("n1", 1)));
  EXPECT_EQ(EndOf(*session.stream).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(AgentServiceTest, NewerRegisterEndsTheOlderSessionsStream) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session old_session = OpenAttached("n1", 1);

  ASSERT_EQ(*Register("n1", 1), 2u);
  grpc::Status fenced = EndOf(*old_session.stream);
  EXPECT_EQ(fenced.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(fenced.error_message(), "session 1 of node n1 was superseded by session 2");

  // The new session works; a late hello of the old one is refused.
  Session new_session = OpenAttached("n1", 2);
  Session late = Open();
  ASSERT_TRUE(late.stream->Write(Hello("n1", 1)));
  grpc::Status refused = EndOf(*late.stream);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(refused.error_message(), "session 1 of node n1 was superseded by session 2");

  EXPECT_EQ(inventory_.ListNodes().size(), 1u);
  EXPECT_EQ(Metric("weft_controller_sessions_fenced_total"), 1);
  EXPECT_TRUE(Eventually([&] { return Metric("weft_controller_agent_streams") == 1; }));
}

TEST_F(AgentServiceTest, StaleTelemetryEndsTheStream) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session session = OpenAttached("n1", 1);
  // Fence at the inventory only, as if the Register raced with this batch.
  ASSERT_TRUE(inventory_.Register(MakeNode("n1"), 1).ok());
  ASSERT_TRUE(session.stream->Write(Telemetry(5e9)));
  grpc::Status status = EndOf(*session.stream);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(status.error_message(), "session 1 of node n1 was superseded by session 2");
  EXPECT_EQ(Metric("weft_controller_telemetry_rejected_total", {{"reason", "superseded"}}),
            1);
}

// A batch of probe windows alone (sent between collections) goes to pingmesh only: it
// is no collection, so it neither counts as a batch nor keeps the node alive; a stale
// session's is refused as its telemetry would be.
TEST_F(AgentServiceTest, ProbeWindowsAloneGoToPingmeshNotToTheInventory) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session session = OpenAttached("n1", 1);
  const double batches = Metric("weft_controller_telemetry_batches_total");
  AgentMessage probes;
  probes.mutable_telemetry()->set_probe_windows_only(true);
  // A window from the future: pingmesh counts it late at once, which shows it got there.
  weft::v1::ProbeWindow* window = probes.mutable_telemetry()->add_probe_windows();
  window->set_window_start_us(absl::ToUnixMicros(clock_.Now() + absl::Hours(1)));
  window->set_window_end_us(window->window_start_us() + 250000);
  window->set_sent(1);
  for (int i = 0; i < 8; ++i) {
    clock_.Advance(absl::Milliseconds(250));
    ASSERT_TRUE(session.stream->Write(probes));
  }
  ASSERT_TRUE(Eventually(
      [&] { return Metric("weft_controller_pingmesh_windows_total", {{"result", "late"}}) == 8; }));
  EXPECT_EQ(Metric("weft_controller_telemetry_batches_total"), batches);
  // 2 s of probe windows alone: the node is silent as far as liveness goes (down after
  // 3 intervals of the inventory's default 1 s).
  clock_.Advance(absl::Seconds(2));
  inventory_.EvaluateLiveness();
  EXPECT_FALSE(inventory_.GetNode("n1")->reporting());

  // Fenced: the next batch of windows ends the stream, as stale telemetry does.
  ASSERT_TRUE(inventory_.Register(MakeNode("n1"), 1).ok());
  ASSERT_TRUE(session.stream->Write(probes));
  grpc::Status status = EndOf(*session.stream);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(Metric("weft_controller_telemetry_rejected_total", {{"reason", "superseded"}}), 1);
  EXPECT_EQ(Metric("weft_controller_pingmesh_windows_total", {{"result", "late"}}), 8);
}

TEST_F(AgentServiceTest, SecondStreamOfTheSameSessionIsRefused) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session first = OpenAttached("n1", 1);
  Session second = Open();
  ASSERT_TRUE(second.stream->Write(Hello("n1", 1)));
  grpc::Status status = EndOf(*second.stream);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(status.error_message().find("session 1 of node n1 already has an open stream"),
            std::string::npos);
  // The first stream is untouched.
  ASSERT_TRUE(first.stream->Write(Telemetry(2e9)));
  EXPECT_TRUE(Eventually([&] {
    auto node = inventory_.GetNode("n1");
    return node.ok() && node->rates().tx_gbps() == 16.0;
  }));
}

// Desired states reach the agent in order; one still queued behind a write in flight
// is replaced by a newer one, so the agent sees an increasing run ending at the newest.
TEST_F(AgentServiceTest, SendToNodeWritesInOrderAndTheNewestDesiredStateWins) {
  EXPECT_EQ(service_.SendToNode("n1", ControllerMessage()).code(),
            absl::StatusCode::kNotFound);
  ASSERT_EQ(*Register("n1"), 1u);
  Session session = OpenAttached("n1", 1);
  for (uint64_t version = 1; version <= 20; ++version) {
    ControllerMessage message;
    message.mutable_desired_state()->set_node_name("n1");
    message.mutable_desired_state()->set_version(version);
    ASSERT_TRUE(service_.SendToNode("n1", message).ok());
  }
  uint64_t last = 0;
  int received = 0;
  while (last < 20) {
    ControllerMessage message;
    ASSERT_TRUE(session.stream->Read(&message));
    EXPECT_GT(message.desired_state().version(), last);
    last = message.desired_state().version();
    ++received;
  }
  EXPECT_EQ(last, 20u);
  EXPECT_LE(received, 20);
}

TEST_F(AgentServiceTest, DesiredStateAcksAreCounted) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session session = OpenAttached("n1", 1);
  AgentMessage ack;
  ack.mutable_desired_state_ack()->set_version(3);
  ack.mutable_desired_state_ack()->set_accepted(true);
  ASSERT_TRUE(session.stream->Write(ack));
  AgentMessage nack;
  nack.mutable_desired_state_ack()->set_version(4);
  nack.mutable_desired_state_ack()->set_accepted(false);
  weft::v1::ParameterError* error = nack.mutable_desired_state_ack()->add_errors();
  error->set_device("mlx5_0");
  error->set_parameter("rp_min_rate");
  error->set_value("7");
  error->set_reason("EINVAL");
  ASSERT_TRUE(session.stream->Write(nack));
  EXPECT_TRUE(Eventually([&] {
    return Metric("weft_controller_desired_state_acks_total", {{"result", "ack"}}) == 1 &&
           Metric("weft_controller_desired_state_acks_total", {{"result", "nack"}}) == 1;
  }));
}

TEST_F(AgentServiceTest, ClosingTheClientSideEndsTheStreamCleanly) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session session = OpenAttached("n1", 1);
  EXPECT_EQ(Metric("weft_controller_agent_streams"), 1);
  ASSERT_TRUE(session.stream->WritesDone());
  EXPECT_TRUE(EndOf(*session.stream).ok());
  EXPECT_TRUE(Eventually([&] { return service_.open_streams() == 0; }));
  EXPECT_EQ(Metric("weft_controller_agent_streams"), 0);
  EXPECT_EQ(service_.SendToNode("n1", ControllerMessage()).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(AgentServiceTest, FinishAllStreamsEndsStreamsAndRefusesNewWork) {
  ASSERT_EQ(*Register("n1"), 1u);
  Session session = OpenAttached("n1", 1);
  Session unattached = Open();
  service_.FinishAllStreams(absl::UnavailableError("the controller is shutting down"));
  EXPECT_EQ(EndOf(*session.stream).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(EndOf(*unattached.stream).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Register("n2").status().code(), absl::StatusCode::kUnavailable);
  Session late = Open();
  EXPECT_EQ(EndOf(*late.stream).error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace weft::controller
