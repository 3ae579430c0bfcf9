// The one conversion between absl::Status and grpc::Status, both directions, used at
// every gRPC boundary (the controller's and the agent's service adapters, their
// clients, libweft's agent client, the authorization processor). Logic returns
// absl::Status; only adapters convert. The two code spaces are numerically identical
// (both follow google.rpc.Code), so code and message pass through unchanged.
// Stateless; thread-safe.
#ifndef WEFT_COMMON_GRPC_STATUS_H_
#define WEFT_COMMON_GRPC_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "grpcpp/support/status.h"

namespace weft {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// Ends a callback-API unary call with `status` (converted) on the context's default
// reactor, which the handler returns: the services' adapters finish every call this way.
grpc::ServerUnaryReactor* FinishWith(grpc::CallbackServerContext* context,
                                     const absl::Status& status);

// The same with `result`'s status, moving its value into `*out` (the response) when OK.
template <typename T>
grpc::ServerUnaryReactor* FinishWith(grpc::CallbackServerContext* context,
                                     absl::StatusOr<T> result, T* out) {
  if (result.ok()) *out = *std::move(result);
  return FinishWith(context, result.status());
}

}  // namespace weft

#endif  // WEFT_COMMON_GRPC_STATUS_H_
