// HealthServer: the agent's gRPC health endpoint (grpc.health.v1.Health, the standard
// protocol that grpc_health_probe, Kubernetes and load balancers speak). It serves
// nothing else. The overall status ("") is NOT_SERVING until the owner says otherwise;
// the agent sets SERVING while it is registered with the controller.
//
// Start() turns on gRPC's default health service process-wide
// (grpc::EnableDefaultHealthCheckService), which affects servers built after it.
// Thread-safe; destroying the object stops the server (watchers see NOT_SERVING).
#ifndef WEFT_AGENT_HEALTH_SERVER_H_
#define WEFT_AGENT_HEALTH_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/server.h"

namespace weft::agent {

class HealthServer {
 public:
  // Binds `address` ("host:port"; port 0 picks a free one). UNAVAILABLE when it
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(absl::string_view address);

  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  // SERVING when true, NOT_SERVING when false.
  void SetServing(bool serving);

  // "host:port" actually bound.
  const std::string& address() const { return address_; }

 private:
  HealthServer(std::unique_ptr<grpc::CallbackGenericService> unimplemented,
               std::unique_ptr<grpc::Server> server, std::string address)
      : unimplemented_(std::move(unimplemented)),
        server_(std::move(server)),
        address_(std::move(address)) {}

  // Answers UNIMPLEMENTED to every other method; see Start() for why it exists.
  std::unique_ptr<grpc::CallbackGenericService> unimplemented_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_HEALTH_SERVER_H_
