// PlacementServiceImpl: weft.v1.PlacementService (placement.proto), what schedulers
// and `weftctl place` call to place a job's ranks, release or renew the reservation,
// list the live reservations, and read the topology. A thin callback-API adapter:
// every handler delegates to the PlacementManager and converts its absl::Status into
// the RPC's, code and message unchanged (RESOURCE_EXHAUSTED with where capacity is
// free, FAILED_PRECONDITION for constraints no state of the cluster could meet or a job
// holding another reservation, INVALID_ARGUMENT for a bad request or unknown QoS class,
// NOT_FOUND for an unknown or expired reservation). ReportJobProgress keeps a job's
// newest iteration in memory only (not durable: lost on a controller restart); ListJobs
// answers every reservation with it and the congestion on the job's nodes.
//
// Handlers run on gRPC's callback threads and finish inline; Place holds the
// reservation book's mutex while the engine runs (milliseconds). Place goes through
// PrecheckedPlacement (controller/placement/prechecked_placement.h): with
// precheck_seconds it answers from the pre-job check's callback. Thread-safe.
#ifndef WEFT_CONTROLLER_API_PLACEMENT_SERVICE_H_
#define WEFT_CONTROLLER_API_PLACEMENT_SERVICE_H_

#include "controller/placement/placement_manager.h"
#include "controller/placement/prechecked_placement.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/placement.grpc.pb.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::controller {

class PlacementServiceImpl final : public weft::v1::PlacementService::CallbackService {
 public:
  // `placement` must outlive the service; `check` runs pre-job checks (empty: none).
  explicit PlacementServiceImpl(PlacementManager* placement,
                                PrecheckedPlacement::CheckRunner check = nullptr);

  PlacementServiceImpl(const PlacementServiceImpl&) = delete;
  PlacementServiceImpl& operator=(const PlacementServiceImpl&) = delete;

  grpc::ServerUnaryReactor* Place(grpc::CallbackServerContext* context,
                                  const weft::v1::PlacementRequest* request,
                                  weft::v1::PlacementResponse* response) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* context,
                                    const weft::v1::ReleaseRequest* request,
                                    weft::v1::ReleaseResponse* response) override;
  grpc::ServerUnaryReactor* Renew(grpc::CallbackServerContext* context,
                                  const weft::v1::RenewRequest* request,
                                  weft::v1::RenewResponse* response) override;
  grpc::ServerUnaryReactor* ListReservations(
      grpc::CallbackServerContext* context, const weft::v1::ListReservationsRequest* request,
      weft::v1::ListReservationsResponse* response) override;
  grpc::ServerUnaryReactor* GetTopology(grpc::CallbackServerContext* context,
                                        const weft::v1::GetTopologyRequest* request,
                                        weft::v1::GetTopologyResponse* response) override;
  grpc::ServerUnaryReactor* ReportJobProgress(
      grpc::CallbackServerContext* context, const weft::v1::ReportJobProgressRequest* request,
      weft::v1::ReportJobProgressResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const weft::v1::ListJobsRequest* request,
                                     weft::v1::ListJobsResponse* response) override;

 private:
  PlacementManager* const placement_;
  PrecheckedPlacement prechecked_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_PLACEMENT_SERVICE_H_
