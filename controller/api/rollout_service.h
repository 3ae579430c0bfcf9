// RolloutServiceImpl: weft.v1.RolloutService (rollout.proto) over gRPC's callback API,
// a thin adapter onto RolloutManager: each handler delegates and converts the
// absl::Status (common/grpc_status.h). Start, pause, resume and abort name the
// caller's authenticated identity (security::CallerOf) in the rollout's
// started_by and history. Handlers finish inline; the manager's calls take only short
// mutexes. Thread-safe.
#ifndef WEFT_CONTROLLER_API_ROLLOUT_SERVICE_H_
#define WEFT_CONTROLLER_API_ROLLOUT_SERVICE_H_

#include <memory>

#include "controller/rollout/rollout_manager.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/rollout.grpc.pb.h"
#include "proto/weft/v1/rollout.pb.h"

namespace weft::controller {

class RolloutServiceImpl final : public weft::v1::RolloutService::CallbackService {
 public:
  // `manager` must outlive the service.
  explicit RolloutServiceImpl(RolloutManager* manager);

  RolloutServiceImpl(const RolloutServiceImpl&) = delete;
  RolloutServiceImpl& operator=(const RolloutServiceImpl&) = delete;

  grpc::ServerUnaryReactor* ValidatePolicy(grpc::CallbackServerContext* context,
                                           const weft::v1::PolicyRequest* request,
                                           weft::v1::ValidatePolicyResponse* response) override;
  grpc::ServerUnaryReactor* DiffPolicy(grpc::CallbackServerContext* context,
                                       const weft::v1::PolicyRequest* request,
                                       weft::v1::DiffPolicyResponse* response) override;
  grpc::ServerUnaryReactor* StartRollout(grpc::CallbackServerContext* context,
                                         const weft::v1::PolicyRequest* request,
                                         weft::v1::RolloutResponse* response) override;
  grpc::ServerUnaryReactor* GetRollout(grpc::CallbackServerContext* context,
                                       const weft::v1::RolloutRequest* request,
                                       weft::v1::RolloutResponse* response) override;
  grpc::ServerUnaryReactor* PauseRollout(grpc::CallbackServerContext* context,
                                         const weft::v1::RolloutRequest* request,
                                         weft::v1::RolloutResponse* response) override;
  grpc::ServerUnaryReactor* ResumeRollout(grpc::CallbackServerContext* context,
                                          const weft::v1::RolloutRequest* request,
                                          weft::v1::RolloutResponse* response) override;
  grpc::ServerUnaryReactor* AbortRollout(grpc::CallbackServerContext* context,
                                         const weft::v1::RolloutRequest* request,
                                         weft::v1::RolloutResponse* response) override;
  grpc::ServerUnaryReactor* ListRollouts(grpc::CallbackServerContext* context,
                                         const weft::v1::ListRolloutsRequest* request,
                                         weft::v1::ListRolloutsResponse* response) override;

 private:
  RolloutManager* const manager_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_ROLLOUT_SERVICE_H_
