// PingmeshServiceImpl: weft.v1.PingmeshService (pingmesh.proto) over gRPC's callback
// API, a thin adapter onto PingmeshManager (controller/pingmesh/pingmesh_manager.h):
// the verdicts in force and the plan, the loss/latency matrix, and the pre-job check,
// which answers from the manager's ticker once the nodes have probed and been judged
// (the handler returns at once; the reactor finishes later). Thread-safe.
#ifndef WEFT_CONTROLLER_API_PINGMESH_SERVICE_H_
#define WEFT_CONTROLLER_API_PINGMESH_SERVICE_H_

#include "controller/pingmesh/pingmesh_manager.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/pingmesh.grpc.pb.h"
#include "proto/weft/v1/pingmesh.pb.h"

namespace weft::controller {

class PingmeshServiceImpl final : public weft::v1::PingmeshService::CallbackService {
 public:
  // `manager` must outlive the service.
  explicit PingmeshServiceImpl(PingmeshManager* manager) : manager_(manager) {}
  PingmeshServiceImpl(const PingmeshServiceImpl&) = delete;
  PingmeshServiceImpl& operator=(const PingmeshServiceImpl&) = delete;

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const weft::v1::GetPingmeshStatusRequest* request,
                                      weft::v1::PingmeshStatus* response) override;
  grpc::ServerUnaryReactor* GetMatrix(grpc::CallbackServerContext* context,
                                      const weft::v1::GetPingmeshMatrixRequest* request,
                                      weft::v1::PingmeshMatrix* response) override;
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const weft::v1::CheckRequest* request,
                                  weft::v1::CheckResponse* response) override;

 private:
  PingmeshManager* const manager_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_PINGMESH_SERVICE_H_
