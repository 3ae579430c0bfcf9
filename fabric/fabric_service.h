// FabricServiceImpl: weft.v1.FabricService (fabric.proto) over a TwinHost. Transport
// only: every handler delegates to fabric/twin_host.h and converts its absl::Status
// (common/grpc_status.h). Thread-safe (TwinHost is).
#ifndef WEFT_FABRIC_FABRIC_SERVICE_H_
#define WEFT_FABRIC_FABRIC_SERVICE_H_

#include <functional>

#include "fabric/twin_host.h"
#include "proto/weft/v1/fabric.grpc.pb.h"

namespace weft::fabric {

class FabricServiceImpl final : public weft::v1::FabricService::CallbackService {
 public:
  // Where ListJobs gets its jobs: the job generator's (with their reservations) or the
  // twin's own (fabric/job_generator.h, TwinJobs).
  using JobLister = std::function<weft::v1::ListFabricJobsResponse()>;

  // `twin` outlives this.
  FabricServiceImpl(TwinHost* twin, JobLister jobs);

  grpc::ServerUnaryReactor* ReadNode(grpc::CallbackServerContext* context,
                                     const weft::v1::ReadNodeRequest* request,
                                     weft::v1::ReadNodeResponse* response) override;
  grpc::ServerUnaryReactor* SetNicTunables(grpc::CallbackServerContext* context,
                                           const weft::v1::SetNicTunablesRequest* request,
                                           weft::v1::SetNicTunablesResponse* response) override;
  grpc::ServerUnaryReactor* InjectFault(grpc::CallbackServerContext* context,
                                        const weft::v1::InjectFaultRequest* request,
                                        weft::v1::InjectFaultResponse* response) override;
  grpc::ServerUnaryReactor* ClearFault(grpc::CallbackServerContext* context,
                                       const weft::v1::ClearFaultRequest* request,
                                       weft::v1::ClearFaultResponse* response) override;
  grpc::ServerUnaryReactor* ListFaults(grpc::CallbackServerContext* context,
                                       const weft::v1::ListFaultsRequest* request,
                                       weft::v1::ListFaultsResponse* response) override;
  grpc::ServerUnaryReactor* ListLinks(grpc::CallbackServerContext* context,
                                      const weft::v1::ListLinksRequest* request,
                                      weft::v1::ListLinksResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const weft::v1::ListFabricJobsRequest* request,
                                     weft::v1::ListFabricJobsResponse* response) override;

 private:
  TwinHost* const twin_;
  const JobLister jobs_;
};

}  // namespace weft::fabric

#endif  // WEFT_FABRIC_FABRIC_SERVICE_H_
