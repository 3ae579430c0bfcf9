// Conversion from absl::Status to grpc::Status at the gRPC boundary. The controller's
// logic returns absl::Status; only the service adapters convert. The two code spaces
// are numerically identical (both follow google.rpc.Code), so the code and message
// pass through unchanged. Stateless; thread-safe.
#ifndef WEFT_CONTROLLER_GRPC_STATUS_H_
#define WEFT_CONTROLLER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace weft::controller {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_GRPC_STATUS_H_
