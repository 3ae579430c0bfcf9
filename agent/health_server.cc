#include "agent/health_server.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace weft::agent {

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(absl::string_view address) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // gRPC adds the (callback-based) default health service only in Server::Start, after
  // ServerBuilder has refused a server with no services ("At least one of the
  // completion queues must be frequently polled"). A callback generic service that
  // answers UNIMPLEMENTED, as the server would anyway, gets it past that check.
  auto unimplemented = std::make_unique<grpc::CallbackGenericService>();
  builder.RegisterCallbackGenericService(unimplemented.get());
  int port = 0;
  builder.AddListeningPort(std::string(address), grpc::InsecureServerCredentials(), &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC health on ", address, ": bind failed"));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) {
    return absl::InternalError("gRPC default health service is not available");
  }
  // The default service starts out SERVING; nothing is registered yet.
  health->SetServingStatus(false);
  std::string bound(address);
  const size_t colon = bound.rfind(':');
  if (colon != std::string::npos) bound = absl::StrCat(bound.substr(0, colon), ":", port);
  return std::unique_ptr<HealthServer>(
      new HealthServer(std::move(unimplemented), std::move(server), bound));
}

HealthServer::~HealthServer() {
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
    health->Shutdown();
  }
  // Watch streams are long-lived: give them a moment, then cancel.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server_->Wait();
}

void HealthServer::SetServing(bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(serving);
}

}  // namespace weft::agent
