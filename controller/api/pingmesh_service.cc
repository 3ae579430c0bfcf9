#include "controller/api/pingmesh_service.h"

#include "common/grpc_status.h"

namespace weft::controller {

grpc::ServerUnaryReactor* PingmeshServiceImpl::GetStatus(
    grpc::CallbackServerContext* context, const weft::v1::GetPingmeshStatusRequest* /*request*/,
    weft::v1::PingmeshStatus* response) {
  *response = manager_->Status();
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* PingmeshServiceImpl::GetMatrix(
    grpc::CallbackServerContext* context, const weft::v1::GetPingmeshMatrixRequest* request,
    weft::v1::PingmeshMatrix* response) {
  return FinishWith(context, manager_->Matrix(request->rack()), response);
}

grpc::ServerUnaryReactor* PingmeshServiceImpl::Check(grpc::CallbackServerContext* context,
                                                     const weft::v1::CheckRequest* request,
                                                     weft::v1::CheckResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status started = manager_->StartCheck(
      *request, [reactor, response](absl::StatusOr<weft::v1::CheckResponse> answer) {
        if (answer.ok()) *response = std::move(*answer);
        reactor->Finish(ToGrpcStatus(answer.status()));
      });
  if (!started.ok()) reactor->Finish(ToGrpcStatus(started));
  return reactor;
}

}  // namespace weft::controller
