#include "cli/controller_client.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft {

ControllerClient::ControllerClient(std::shared_ptr<grpc::ChannelInterface> channel,
                                   std::string address, int timeout_ms)
    : address_(std::move(address)),
      timeout_ms_(timeout_ms),
      admin_(weft::v1::AdminService::NewStub(channel)),
      placement_(weft::v1::PlacementService::NewStub(channel)),
      rollouts_(weft::v1::RolloutService::NewStub(channel)),
      tune_(weft::v1::TuneService::NewStub(channel)),
      pingmesh_(weft::v1::PingmeshService::NewStub(channel)) {}

absl::StatusOr<ControllerClient> ControllerClient::Connect(const TransportFlags& transport,
                                                           int timeout_ms) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      WeftctlCredentials(transport);
  if (!credentials.ok()) return credentials.status();
  return ControllerClient(grpc::CreateChannel(transport.controller, *credentials),
                          transport.controller, timeout_ms);
}

std::unique_ptr<grpc::ClientContext> ControllerClient::NewContext(absl::Duration extra) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(timeout_ms_) +
                        absl::ToChronoMilliseconds(extra));
  return context;
}

absl::Status ControllerClient::Explain(const grpc::Status& status) const {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
      status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
    return FromGrpcStatus(status);
  }
  return absl::Status(FromGrpcStatus(status).code(),
                      absl::StrCat("cannot reach the controller at ", address_, " (",
                                   status.error_message(),
                                   "); is weft-controller running? (--controller)"));
}

}  // namespace weft
