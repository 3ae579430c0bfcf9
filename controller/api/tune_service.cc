#include "controller/api/tune_service.h"

#include "common/grpc_status.h"
#include "security/server_auth.h"

namespace weft::controller {

grpc::ServerUnaryReactor* TuneServiceImpl::Propose(grpc::CallbackServerContext* context,
                                                   const weft::v1::ProposeRequest* request,
                                                   weft::v1::TuneProposal* response) {
  return FinishWith(context, manager_->Propose(*request, security::CallerOf(*context).name),
                    response);
}

grpc::ServerUnaryReactor* TuneServiceImpl::GetProposal(
    grpc::CallbackServerContext* context, const weft::v1::TuneProposalRequest* request,
    weft::v1::TuneProposal* response) {
  return FinishWith(context, manager_->Get(request->id()), response);
}

grpc::ServerUnaryReactor* TuneServiceImpl::ListProposals(
    grpc::CallbackServerContext* context, const weft::v1::ListProposalsRequest* /*request*/,
    weft::v1::ListProposalsResponse* response) {
  *response = manager_->List();
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TuneServiceImpl::ApplyProposal(
    grpc::CallbackServerContext* context, const weft::v1::ApplyProposalRequest* request,
    weft::v1::TuneProposal* response) {
  return FinishWith(context, manager_->Apply(request->id(), security::CallerOf(*context).name),
                    response);
}

}  // namespace weft::controller
