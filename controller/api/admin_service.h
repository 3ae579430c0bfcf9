// AdminServiceImpl: weft.v1.AdminService (admin.proto), the operator API that weftctl
// and schedulers call — list and inspect nodes, drain and undrain them, read the
// event log, see racks and pods at a glance. A thin
// callback-API adapter: every handler delegates to the Inventory and converts its
// absl::Status (NOT_FOUND for an unknown node, FAILED_PRECONDITION for undraining a
// node that is not drained, INVALID_ARGUMENT for a missing name) into the RPC's.
// Handlers never block beyond the inventory's short mutex, except drain and undrain,
// which wait for the store's commit, and ListAudit, which reads the audit log (store/).
// A drain and an undrain are recorded under the caller's authenticated identity
// (security::CallerOf: certificate CN or token name, "anonymous" on a
// plaintext listener), in the node's drained_who and the event's who.
// Thread-safe.
#ifndef WEFT_CONTROLLER_API_ADMIN_SERVICE_H_
#define WEFT_CONTROLLER_API_ADMIN_SERVICE_H_

#include <memory>
#include <utility>

#include "common/clock.h"
#include "controller/api/audit_log.h"
#include "controller/inventory/inventory.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft::controller {

class AdminServiceImpl final : public weft::v1::AdminService::CallbackService {
 public:
  // `inventory` must outlive the service; so must `audit_log` and `clock` when given
  // (ListAudit answers UNIMPLEMENTED without them).
  explicit AdminServiceImpl(Inventory* inventory, AuditLog* audit_log = nullptr,
                            const Clock* clock = nullptr);

  AdminServiceImpl(const AdminServiceImpl&) = delete;
  AdminServiceImpl& operator=(const AdminServiceImpl&) = delete;

  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* context,
                                      const weft::v1::ListNodesRequest* request,
                                      weft::v1::ListNodesResponse* response) override;
  grpc::ServerUnaryReactor* GetNode(grpc::CallbackServerContext* context,
                                    const weft::v1::GetNodeRequest* request,
                                    weft::v1::GetNodeResponse* response) override;
  grpc::ServerUnaryReactor* DrainNode(grpc::CallbackServerContext* context,
                                      const weft::v1::DrainNodeRequest* request,
                                      weft::v1::DrainNodeResponse* response) override;
  grpc::ServerUnaryReactor* UndrainNode(grpc::CallbackServerContext* context,
                                        const weft::v1::UndrainNodeRequest* request,
                                        weft::v1::UndrainNodeResponse* response) override;
  grpc::ServerUnaryReactor* ListEvents(grpc::CallbackServerContext* context,
                                       const weft::v1::ListEventsRequest* request,
                                       weft::v1::ListEventsResponse* response) override;
  grpc::ServerUnaryReactor* ListRacks(grpc::CallbackServerContext* context,
                                      const weft::v1::ListRacksRequest* request,
                                      weft::v1::ListRacksResponse* response) override;
  grpc::ServerUnaryReactor* ListAudit(grpc::CallbackServerContext* context,
                                      const weft::v1::ListAuditRequest* request,
                                      weft::v1::ListAuditResponse* response) override;

 private:
  Inventory* const inventory_;
  AuditLog* const audit_log_;
  const Clock* const clock_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_ADMIN_SERVICE_H_
