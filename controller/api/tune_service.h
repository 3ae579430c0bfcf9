// TuneServiceImpl: weft.v1.TuneService (tune.proto) over gRPC's callback API, a thin
// adapter onto TuneManager: each handler delegates and converts the absl::Status
// (common/grpc_status.h). Propose and ApplyProposal name the caller's authenticated
// identity (security::CallerOf) in the proposal. Handlers finish inline: Propose only
// starts the search. Thread-safe.
#ifndef WEFT_CONTROLLER_API_TUNE_SERVICE_H_
#define WEFT_CONTROLLER_API_TUNE_SERVICE_H_

#include "controller/tuning/tune_manager.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/tune.grpc.pb.h"
#include "proto/weft/v1/tune.pb.h"

namespace weft::controller {

class TuneServiceImpl final : public weft::v1::TuneService::CallbackService {
 public:
  // `manager` must outlive the service.
  explicit TuneServiceImpl(TuneManager* manager) : manager_(manager) {}
  TuneServiceImpl(const TuneServiceImpl&) = delete;
  TuneServiceImpl& operator=(const TuneServiceImpl&) = delete;

  grpc::ServerUnaryReactor* Propose(grpc::CallbackServerContext* context,
                                    const weft::v1::ProposeRequest* request,
                                    weft::v1::TuneProposal* response) override;
  grpc::ServerUnaryReactor* GetProposal(grpc::CallbackServerContext* context,
                                        const weft::v1::TuneProposalRequest* request,
                                        weft::v1::TuneProposal* response) override;
  grpc::ServerUnaryReactor* ListProposals(grpc::CallbackServerContext* context,
                                          const weft::v1::ListProposalsRequest* request,
                                          weft::v1::ListProposalsResponse* response) override;
  grpc::ServerUnaryReactor* ApplyProposal(grpc::CallbackServerContext* context,
                                          const weft::v1::ApplyProposalRequest* request,
                                          weft::v1::TuneProposal* response) override;

 private:
  TuneManager* const manager_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_TUNE_SERVICE_H_
