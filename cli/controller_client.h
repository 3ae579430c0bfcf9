// weftctl's one way to the controller: the channel (credentials from the TLS and token
// flags, cli/transport.h), a stub per service, the --timeout_ms deadline on every call,
// and one wording for a failed call. Every command that asks the controller calls it
// through Call(), so an unreachable controller reads the same from every command.
//
// Example:
//   weft::v1::ListNodesResponse response;
//   absl::Status status = controller.Call(&weft::v1::AdminService::StubInterface::ListNodes,
//                                         request, &response);
//   if (!status.ok()) return context.Failed("list nodes", status);
//
// Creating a client does not connect: offline commands never touch the network.
// Thread-compatible (the stubs are thread-safe; weftctl calls from one thread).
#ifndef WEFT_CLI_CONTROLLER_CLIENT_H_
#define WEFT_CLI_CONTROLLER_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/transport.h"
#include "common/grpc_status.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "proto/weft/v1/rollout.grpc.pb.h"
#include "proto/weft/v1/pingmesh.grpc.pb.h"
#include "proto/weft/v1/tune.grpc.pb.h"

namespace weft {

class ControllerClient {
 public:
  // A client of the controller at `address` over `channel`; each call's deadline is
  // `timeout_ms` after it starts.
  ControllerClient(std::shared_ptr<grpc::ChannelInterface> channel, std::string address,
                   int timeout_ms);

  // The channel weftctl's flags ask for. INVALID_ARGUMENT or NOT_FOUND from
  // WeftctlCredentials (a usage error) when the TLS and token flags do not fit.
  static absl::StatusOr<ControllerClient> Connect(const TransportFlags& transport,
                                                  int timeout_ms);

  weft::v1::AdminService::StubInterface& admin() { return *admin_; }
  weft::v1::PlacementService::StubInterface& placement() { return *placement_; }
  weft::v1::RolloutService::StubInterface& rollouts() { return *rollouts_; }
  weft::v1::TuneService::StubInterface& tune() { return *tune_; }

  // A context whose deadline is --timeout_ms (plus `extra`) from now.
  std::unique_ptr<grpc::ClientContext> NewContext(
      absl::Duration extra = absl::ZeroDuration()) const;

  // Calls one unary RPC, e.g. &weft::v1::AdminService::StubInterface::ListNodes, with a
  // fresh context. OK with `*response` filled, or the call's status: UNAVAILABLE and
  // DEADLINE_EXCEEDED say the controller cannot be reached, where, and what to check;
  // any other code carries the controller's own message.
  template <typename Stub, typename Request, typename Response>
  absl::Status Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                 Response*),
                    const Request& request, Response* response) {
    std::unique_ptr<grpc::ClientContext> context = NewContext();
    return Explain((StubFor<Stub>().*method)(context.get(), request, response));
  }

  // Call with `extra` added to the deadline, for a call that waits by design (a check).
  template <typename Stub, typename Request, typename Response>
  absl::Status CallFor(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&,
                                                    Response*),
                       const Request& request, Response* response, absl::Duration extra) {
    std::unique_ptr<grpc::ClientContext> context = NewContext(extra);
    return Explain((StubFor<Stub>().*method)(context.get(), request, response));
  }

  // The status a failed call reports (see Call): for calls made outside it.
  absl::Status Explain(const grpc::Status& status) const;

 private:
  template <typename Stub>
  Stub& StubFor();

  std::string address_;
  int timeout_ms_;
  std::unique_ptr<weft::v1::AdminService::StubInterface> admin_;
  std::unique_ptr<weft::v1::PlacementService::StubInterface> placement_;
  std::unique_ptr<weft::v1::RolloutService::StubInterface> rollouts_;
  std::unique_ptr<weft::v1::TuneService::StubInterface> tune_;
  std::unique_ptr<weft::v1::PingmeshService::StubInterface> pingmesh_;
};

template <>
inline weft::v1::AdminService::StubInterface&
ControllerClient::StubFor<weft::v1::AdminService::StubInterface>() {
  return *admin_;
}
template <>
inline weft::v1::PlacementService::StubInterface&
ControllerClient::StubFor<weft::v1::PlacementService::StubInterface>() {
  return *placement_;
}
template <>
inline weft::v1::RolloutService::StubInterface&
ControllerClient::StubFor<weft::v1::RolloutService::StubInterface>() {
  return *rollouts_;
}
template <>
inline weft::v1::TuneService::StubInterface&
ControllerClient::StubFor<weft::v1::TuneService::StubInterface>() {
  return *tune_;
}

template <>
inline weft::v1::PingmeshService::StubInterface&
ControllerClient::StubFor<weft::v1::PingmeshService::StubInterface>() {
  return *pingmesh_;
}

}  // namespace weft

#endif  // WEFT_CLI_CONTROLLER_CLIENT_H_
