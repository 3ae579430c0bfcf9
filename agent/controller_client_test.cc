#include "agent/controller_client.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using weft::v1::AgentMessage;
using weft::v1::ControllerMessage;

// A scriptable AgentService: answers Register, records the stream's first message,
// pushes one DesiredState, then ends the stream with `end_status` after `end_after`
// further messages (or waits for the client to go away).
class ScriptedService : public weft::v1::AgentService::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context, const weft::v1::RegisterRequest* request,
                        weft::v1::RegisterResponse* response) override {
    if (block_register_) {
      register_entered_.Notify();
      while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
      return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    }
    response->set_session_epoch(request->last_session_epoch() + 10);
    response->set_telemetry_interval_ms(1000);
    return grpc::Status::OK;
  }

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<ControllerMessage, AgentMessage>* stream) override {
    AgentMessage first;
    if (!stream->Read(&first)) return grpc::Status::OK;
    {
      absl::MutexLock lock(&mu_);
      first_ = first;
    }
    ControllerMessage push;
    push.mutable_desired_state()->set_version(3);
    stream->Write(push);
    AgentMessage next;
    int seen = 0;
    while (stream->Read(&next)) {
      absl::MutexLock lock(&mu_);
      ++messages_after_hello_;
      if (++seen == end_after_) return end_status_;
    }
    return grpc::Status::OK;
  }

  AgentMessage first() {
    absl::MutexLock lock(&mu_);
    return first_;
  }
  int messages_after_hello() {
    absl::MutexLock lock(&mu_);
    return messages_after_hello_;
  }

  bool block_register_ = false;
  absl::Notification register_entered_;
  int end_after_ = -1;
  grpc::Status end_status_ = grpc::Status(grpc::StatusCode::ABORTED, "fenced by epoch 99");

 private:
  absl::Mutex mu_;
  AgentMessage first_ ABSL_GUARDED_BY(mu_);
  int messages_after_hello_ ABSL_GUARDED_BY(mu_) = 0;
};

class ControllerClientTest : public ::testing::Test {
 protected:
  void StartServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    client_ = std::make_unique<GrpcControllerClient>(
        GrpcControllerClientOptions{absl::StrCat("127.0.0.1:", port_)});
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  ScriptedService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcControllerClient> client_;
};

TEST_F(ControllerClientTest, RegisterReturnsTheControllersAnswer) {
  StartServer();
  weft::v1::RegisterRequest request;
  request.mutable_node()->set_name("n1");
  request.set_last_session_epoch(5);
  absl::StatusOr<weft::v1::RegisterResponse> response = client_->Register(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->session_epoch(), 15u);
  EXPECT_EQ(response->telemetry_interval_ms(), 1000u);
}

TEST_F(ControllerClientTest, StreamSendsHelloFirstAndCarriesMessagesBothWays) {
  service_.end_after_ = 2;
  StartServer();
  weft::v1::StreamHello hello;
  hello.set_node_name("n1");
  hello.set_session_epoch(15);
  absl::StatusOr<std::unique_ptr<ControllerStream>> stream = client_->Connect(hello);
  ASSERT_TRUE(stream.ok()) << stream.status();

  ControllerMessage down;
  ASSERT_TRUE((*stream)->Read(&down));
  EXPECT_EQ(down.desired_state().version(), 3u);
  EXPECT_EQ(service_.first().hello().node_name(), "n1");
  EXPECT_EQ(service_.first().hello().session_epoch(), 15u);

  AgentMessage up;
  up.mutable_telemetry()->set_collected_at_us(1);
  EXPECT_TRUE((*stream)->Write(up).ok());
  EXPECT_TRUE((*stream)->Write(up).ok());
  // The controller ends the stream after two messages, as it does when it fences us.
  EXPECT_FALSE((*stream)->Read(&down));
  const absl::Status status = (*stream)->Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_EQ(status.message(), "fenced by epoch 99");
  EXPECT_EQ(service_.messages_after_hello(), 2);
}

TEST_F(ControllerClientTest, CancelUnblocksTheReader) {
  StartServer();
  auto stream = client_->Connect(weft::v1::StreamHello());
  ASSERT_TRUE(stream.ok()) << stream.status();
  ControllerMessage down;
  ASSERT_TRUE((*stream)->Read(&down));  // the pushed desired state
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(50));
    (*stream)->Cancel();
  });
  const absl::Time start = absl::Now();
  EXPECT_FALSE((*stream)->Read(&down));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  canceller.join();
  EXPECT_EQ((*stream)->Finish().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE((*stream)->Write(AgentMessage()).ok());
}

TEST_F(ControllerClientTest, ShutdownCancelsCallsInFlightAndRefusesNewOnes) {
  service_.block_register_ = true;
  StartServer();
  absl::StatusOr<weft::v1::RegisterResponse> result;
  std::thread caller([&] { result = client_->Register(weft::v1::RegisterRequest()); });
  service_.register_entered_.WaitForNotification();
  const absl::Time start = absl::Now();
  client_->Shutdown();
  caller.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_EQ(client_->Register(weft::v1::RegisterRequest()).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(client_->Connect(weft::v1::StreamHello()).status().code(),
            absl::StatusCode::kCancelled);
}

TEST(ControllerClientUnreachableTest, RegisterAndConnectFailUnavailable) {
  // Nothing listens on port 1 of loopback: the connection is refused at once.
  GrpcControllerClient client(GrpcControllerClientOptions{"127.0.0.1:1"});
  EXPECT_EQ(client.Register(weft::v1::RegisterRequest()).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(client.Connect(weft::v1::StreamHello()).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace weft::agent
