#include "agent/health_server.h"

#include <chrono>

#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/grpc/health/v1/health.grpc.pb.h"

namespace weft::agent {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

HealthCheckResponse::ServingStatus Check(const std::string& address,
                                         const std::string& service = "") {
  auto stub = Health::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  return response.status();
}

TEST(HealthServerTest, NotServingUntilToldOtherwise) {
  absl::StatusOr<std::unique_ptr<HealthServer>> server = HealthServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  EXPECT_NE(address, "127.0.0.1:0");
  EXPECT_EQ(Check(address), HealthCheckResponse::NOT_SERVING);
  (*server)->SetServing(true);
  EXPECT_EQ(Check(address), HealthCheckResponse::SERVING);
  (*server)->SetServing(false);
  EXPECT_EQ(Check(address), HealthCheckResponse::NOT_SERVING);
}

TEST(HealthServerTest, ServesNothingButHealth) {
  auto server = HealthServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = Health::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  HealthCheckRequest request;
  request.set_service("weft.v1.AgentService");
  HealthCheckResponse response;
  EXPECT_EQ(stub->Check(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(HealthServerTest, UnbindableAddressIsUnavailable) {
  auto server = HealthServer::Start("256.1.1.1:1");
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable) << server.status();
}

}  // namespace
}  // namespace weft::agent
