#include "fabric/fabric_service.h"

#include <utility>

#include "common/grpc_status.h"

namespace weft::fabric {
FabricServiceImpl::FabricServiceImpl(TwinHost* twin, JobLister jobs)
    : twin_(twin), jobs_(std::move(jobs)) {}

grpc::ServerUnaryReactor* FabricServiceImpl::ReadNode(grpc::CallbackServerContext* context,
                                                      const weft::v1::ReadNodeRequest* request,
                                                      weft::v1::ReadNodeResponse* response) {
  absl::StatusOr<weft::v1::ReadNodeResponse> node = twin_->ReadNode(request->node());
  if (node.ok()) *response = *std::move(node);
  return FinishWith(context, node.status());
}

grpc::ServerUnaryReactor* FabricServiceImpl::SetNicTunables(
    grpc::CallbackServerContext* context, const weft::v1::SetNicTunablesRequest* request,
    weft::v1::SetNicTunablesResponse* /*response*/) {
  return FinishWith(context, twin_->SetNicTunables(*request));
}

grpc::ServerUnaryReactor* FabricServiceImpl::InjectFault(
    grpc::CallbackServerContext* context, const weft::v1::InjectFaultRequest* request,
    weft::v1::InjectFaultResponse* response) {
  absl::StatusOr<weft::v1::FabricFault> fault = twin_->InjectFault(request->fault());
  if (fault.ok()) *response->mutable_fault() = *std::move(fault);
  return FinishWith(context, fault.status());
}

grpc::ServerUnaryReactor* FabricServiceImpl::ClearFault(grpc::CallbackServerContext* context,
                                                        const weft::v1::ClearFaultRequest* request,
                                                        weft::v1::ClearFaultResponse* /*response*/) {
  return FinishWith(context, twin_->ClearFault(request->id()));
}

grpc::ServerUnaryReactor* FabricServiceImpl::ListFaults(
    grpc::CallbackServerContext* context, const weft::v1::ListFaultsRequest* /*request*/,
    weft::v1::ListFaultsResponse* response) {
  *response = twin_->ListFaults();
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* FabricServiceImpl::ListLinks(grpc::CallbackServerContext* context,
                                                       const weft::v1::ListLinksRequest* request,
                                                       weft::v1::ListLinksResponse* response) {
  *response = twin_->ListLinks(*request);
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* FabricServiceImpl::ListJobs(
    grpc::CallbackServerContext* context, const weft::v1::ListFabricJobsRequest* /*request*/,
    weft::v1::ListFabricJobsResponse* response) {
  *response = jobs_();
  return FinishWith(context, absl::OkStatus());
}

}  // namespace weft::fabric
