#include "controller/api/placement_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"

namespace weft::controller {
PlacementServiceImpl::PlacementServiceImpl(PlacementManager* placement,
                                           PrecheckedPlacement::CheckRunner check)
    : placement_(placement), prechecked_(placement, std::move(check)) {}

grpc::ServerUnaryReactor* PlacementServiceImpl::Place(grpc::CallbackServerContext* context,
                                                      const weft::v1::PlacementRequest* request,
                                                      weft::v1::PlacementResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  prechecked_.Place(*request,
                    [reactor, response](absl::StatusOr<weft::v1::PlacementResponse> placed) {
                      if (placed.ok()) *response = *std::move(placed);
                      reactor->Finish(ToGrpcStatus(placed.status()));
                    });
  return reactor;
}

grpc::ServerUnaryReactor* PlacementServiceImpl::Release(
    grpc::CallbackServerContext* context, const weft::v1::ReleaseRequest* request,
    weft::v1::ReleaseResponse* /*response*/) {
  return FinishWith(context, placement_->Release(request->reservation_id()));
}

grpc::ServerUnaryReactor* PlacementServiceImpl::Renew(grpc::CallbackServerContext* context,
                                                      const weft::v1::RenewRequest* request,
                                                      weft::v1::RenewResponse* response) {
  absl::StatusOr<weft::v1::PlacementResponse> renewed =
      placement_->Renew(request->reservation_id(), request->lease_ttl_s());
  if (renewed.ok()) response->set_expires_at_unix_s(renewed->expires_at_unix_s());
  return FinishWith(context, renewed.status());
}

grpc::ServerUnaryReactor* PlacementServiceImpl::ListReservations(
    grpc::CallbackServerContext* context, const weft::v1::ListReservationsRequest* /*request*/,
    weft::v1::ListReservationsResponse* response) {
  *response = placement_->ListReservations();
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* PlacementServiceImpl::GetTopology(
    grpc::CallbackServerContext* context, const weft::v1::GetTopologyRequest* /*request*/,
    weft::v1::GetTopologyResponse* response) {
  *response = placement_->GetTopology();
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* PlacementServiceImpl::ReportJobProgress(
    grpc::CallbackServerContext* context, const weft::v1::ReportJobProgressRequest* request,
    weft::v1::ReportJobProgressResponse* /*response*/) {
  return FinishWith(context,
                    placement_->ReportJobProgress(request->reservation_id(), request->progress()));
}

grpc::ServerUnaryReactor* PlacementServiceImpl::ListJobs(
    grpc::CallbackServerContext* context, const weft::v1::ListJobsRequest* /*request*/,
    weft::v1::ListJobsResponse* response) {
  *response = placement_->ListJobs();
  return FinishWith(context, absl::OkStatus());
}

}  // namespace weft::controller
