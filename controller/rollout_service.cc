#include "controller/rollout_service.h"

#include <utility>

#include "controller/grpc_status.h"

namespace weft::controller {
namespace {

// Finishes with `result`'s status, moving its value into `*out` when OK.
template <typename T>
grpc::ServerUnaryReactor* FinishWith(grpc::CallbackServerContext* context,
                                     absl::StatusOr<T> result, T* out) {
  if (result.ok()) *out = *std::move(result);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(result.status()));
  return reactor;
}

absl::StatusOr<weft::v1::RolloutResponse> Wrap(absl::StatusOr<weft::v1::Rollout> rollout) {
  if (!rollout.ok()) return rollout.status();
  weft::v1::RolloutResponse response;
  *response.mutable_rollout() = *std::move(rollout);
  return response;
}

}  // namespace

RolloutServiceImpl::RolloutServiceImpl(RolloutManager* manager) : manager_(manager) {}

grpc::ServerUnaryReactor* RolloutServiceImpl::ValidatePolicy(
    grpc::CallbackServerContext* context, const weft::v1::PolicyRequest* request,
    weft::v1::ValidatePolicyResponse* response) {
  return FinishWith(context, manager_->Validate(*request), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::DiffPolicy(grpc::CallbackServerContext* context,
                                                         const weft::v1::PolicyRequest* request,
                                                         weft::v1::DiffPolicyResponse* response) {
  return FinishWith(context, manager_->Diff(*request), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::StartRollout(
    grpc::CallbackServerContext* context, const weft::v1::PolicyRequest* request,
    weft::v1::RolloutResponse* response) {
  return FinishWith(context, Wrap(manager_->Start(*request)), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::GetRollout(grpc::CallbackServerContext* context,
                                                         const weft::v1::RolloutRequest* request,
                                                         weft::v1::RolloutResponse* response) {
  return FinishWith(context, Wrap(manager_->Get(request->id())), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::PauseRollout(
    grpc::CallbackServerContext* context, const weft::v1::RolloutRequest* request,
    weft::v1::RolloutResponse* response) {
  return FinishWith(context, Wrap(manager_->Pause(request->id())), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::ResumeRollout(
    grpc::CallbackServerContext* context, const weft::v1::RolloutRequest* request,
    weft::v1::RolloutResponse* response) {
  return FinishWith(context, Wrap(manager_->Resume(request->id())), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::AbortRollout(
    grpc::CallbackServerContext* context, const weft::v1::RolloutRequest* request,
    weft::v1::RolloutResponse* response) {
  return FinishWith(context, Wrap(manager_->Abort(request->id(), request->reason())), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::ListRollouts(
    grpc::CallbackServerContext* context, const weft::v1::ListRolloutsRequest* /*request*/,
    weft::v1::ListRolloutsResponse* response) {
  return FinishWith(context, absl::StatusOr<weft::v1::ListRolloutsResponse>(manager_->List()),
                    response);
}

}  // namespace weft::controller
