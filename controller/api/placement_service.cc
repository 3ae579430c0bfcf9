#include "controller/api/placement_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"

namespace weft::controller {
PlacementServiceImpl::PlacementServiceImpl(PlacementManager* placement,
                                           PingmeshManager* pingmesh)
    : placement_(placement), pingmesh_(pingmesh) {}

grpc::ServerUnaryReactor* PlacementServiceImpl::Place(grpc::CallbackServerContext* context,
                                                      const weft::v1::PlacementRequest* request,
                                                      weft::v1::PlacementResponse* response) {
  // Asked again for a job that holds a reservation: Place returns that one, which was
  // checked (or not) when it was made; never check or release it here.
  bool held = false;
  if (request->precheck_seconds() > 0) {
    const weft::v1::ListReservationsResponse live = placement_->ListReservations();
    for (const weft::v1::PlacementResponse& r : live.reservations()) {
      held = held || r.job_id() == request->job_id();
    }
  }
  absl::StatusOr<weft::v1::PlacementResponse> placed = placement_->Place(*request);
  if (!placed.ok() || request->precheck_seconds() == 0 || held) {
    if (placed.ok()) *response = *std::move(placed);
    return FinishWith(context, placed.status());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (pingmesh_ == nullptr) {
    placement_->Release(placed->reservation_id()).IgnoreError();
    reactor->Finish(ToGrpcStatus(absl::FailedPreconditionError(
        "precheck_seconds asks for a pre-job check, which this controller cannot run")));
    return reactor;
  }
  weft::v1::CheckRequest check;
  for (const std::string& node : placed->ring_order()) check.add_nodes(node);
  check.set_seconds(request->precheck_seconds());
  auto answer = [this, reactor, response, request = *request,
                 first = *placed](absl::StatusOr<weft::v1::CheckResponse> checked) mutable {
    if (!checked.ok()) {
      // The reservation would be unchecked: release it and say why.
      placement_->Release(first.reservation_id()).IgnoreError();
      reactor->Finish(ToGrpcStatus(checked.status()));
      return;
    }
    std::vector<std::string> failed;
    for (const weft::v1::NodeCheck& node : checked->nodes()) {
      if (!node.passed()) failed.push_back(node.node());
    }
    if (failed.empty()) {
      *response = std::move(first);
      *response->mutable_precheck() = *std::move(checked);
      reactor->Finish(grpc::Status::OK);
      return;
    }
    // Placed again without the nodes that failed.
    placement_->Release(first.reservation_id()).IgnoreError();
    for (const std::string& node : failed) {
      request.mutable_constraints()->add_exclude_nodes(node);
    }
    absl::StatusOr<weft::v1::PlacementResponse> again = placement_->Place(request);
    if (again.ok()) {
      *response = *std::move(again);
      *response->mutable_precheck() = *std::move(checked);
      reactor->Finish(grpc::Status::OK);
      return;
    }
    reactor->Finish(ToGrpcStatus(absl::Status(
        again.status().code(),
        absl::StrCat("after the pre-job check left out ", absl::StrJoin(failed, ", "), ": ",
                     again.status().message()))));
  };
  if (absl::Status started = pingmesh_->StartCheck(check, std::move(answer)); !started.ok()) {
    placement_->Release(placed->reservation_id()).IgnoreError();
    reactor->Finish(ToGrpcStatus(started));
  }
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
