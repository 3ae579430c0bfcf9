#include "controller/api/rollout_service.h"

#include <string>
#include <utility>

#include "common/grpc_status.h"
#include "security/server_auth.h"

namespace weft::controller {
namespace {

absl::StatusOr<weft::v1::RolloutResponse> Wrap(absl::StatusOr<weft::v1::Rollout> rollout) {
  if (!rollout.ok()) return rollout.status();
  weft::v1::RolloutResponse response;
  *response.mutable_rollout() = *std::move(rollout);
  return response;
}

// Runs `action` with the caller's authenticated name and finishes with its rollout.
template <typename Action>
grpc::ServerUnaryReactor* AsCaller(grpc::CallbackServerContext* context,
                                   weft::v1::RolloutResponse* response, Action action) {
  return FinishWith(context, Wrap(action(security::CallerOf(*context).name)), response);
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
  return AsCaller(context, response,
                  [&](const std::string& who) { return manager_->Start(*request, who); });
}

grpc::ServerUnaryReactor* RolloutServiceImpl::GetRollout(grpc::CallbackServerContext* context,
                                                         const weft::v1::RolloutRequest* request,
                                                         weft::v1::RolloutResponse* response) {
  return FinishWith(context, Wrap(manager_->Get(request->id())), response);
}

grpc::ServerUnaryReactor* RolloutServiceImpl::PauseRollout(
    grpc::CallbackServerContext* context, const weft::v1::RolloutRequest* request,
    weft::v1::RolloutResponse* response) {
  return AsCaller(context, response,
                  [&](const std::string& who) { return manager_->Pause(request->id(), who); });
}

grpc::ServerUnaryReactor* RolloutServiceImpl::ResumeRollout(
    grpc::CallbackServerContext* context, const weft::v1::RolloutRequest* request,
    weft::v1::RolloutResponse* response) {
  return AsCaller(context, response,
                  [&](const std::string& who) { return manager_->Resume(request->id(), who); });
}

grpc::ServerUnaryReactor* RolloutServiceImpl::AbortRollout(
    grpc::CallbackServerContext* context, const weft::v1::RolloutRequest* request,
    weft::v1::RolloutResponse* response) {
  return AsCaller(context, response, [&](const std::string& who) {
    return manager_->Abort(request->id(), request->reason(), who);
  });
}

grpc::ServerUnaryReactor* RolloutServiceImpl::ListRollouts(
    grpc::CallbackServerContext* context, const weft::v1::ListRolloutsRequest* /*request*/,
    weft::v1::ListRolloutsResponse* response) {
  return FinishWith(context, absl::StatusOr<weft::v1::ListRolloutsResponse>(manager_->List()),
                    response);
}

}  // namespace weft::controller
