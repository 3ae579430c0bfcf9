#include "controller/api/admin_service.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/grpc_status.h"
#include "security/server_auth.h"

namespace weft::controller {
namespace {

absl::Status RequireName(absl::string_view rpc, const std::string& name) {
  if (!name.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(rpc, ": the node name is empty"));
}

}  // namespace

AdminServiceImpl::AdminServiceImpl(Inventory* inventory, AuditLog* audit_log,
                                   const Clock* clock)
    : inventory_(inventory), audit_log_(audit_log), clock_(clock) {}

grpc::ServerUnaryReactor* AdminServiceImpl::ListNodes(
    grpc::CallbackServerContext* context, const weft::v1::ListNodesRequest* request,
    weft::v1::ListNodesResponse* response) {
  for (weft::v1::NodeStatus& node : inventory_->ListNodes(request->rack())) {
    *response->add_nodes() = std::move(node);
  }
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetNode(grpc::CallbackServerContext* context,
                                                    const weft::v1::GetNodeRequest* request,
                                                    weft::v1::GetNodeResponse* response) {
  if (absl::Status s = RequireName("GetNode", request->name()); !s.ok()) {
    return FinishWith(context, s);
  }
  absl::StatusOr<weft::v1::NodeStatus> node = inventory_->GetNode(request->name());
  if (node.ok()) *response->mutable_node() = *std::move(node);
  return FinishWith(context, node.status());
}

grpc::ServerUnaryReactor* AdminServiceImpl::DrainNode(
    grpc::CallbackServerContext* context, const weft::v1::DrainNodeRequest* request,
    weft::v1::DrainNodeResponse* response) {
  if (absl::Status s = RequireName("DrainNode", request->name()); !s.ok()) {
    return FinishWith(context, s);
  }
  const security::Principal caller = security::CallerOf(*context);
  absl::StatusOr<weft::v1::NodeStatus> node =
      inventory_->Drain(request->name(), request->reason(), caller.name);
  if (node.ok()) {
    WEFT_LOG(INFO) << "drain requested node=" << request->name() << " who=" << caller.name
                   << " peer=" << context->peer() << " reason=\"" << node->drain_reason()
                   << "\"";
    *response->mutable_node() = *std::move(node);
  }
  return FinishWith(context, node.status());
}

grpc::ServerUnaryReactor* AdminServiceImpl::UndrainNode(
    grpc::CallbackServerContext* context, const weft::v1::UndrainNodeRequest* request,
    weft::v1::UndrainNodeResponse* response) {
  if (absl::Status s = RequireName("UndrainNode", request->name()); !s.ok()) {
    return FinishWith(context, s);
  }
  const security::Principal caller = security::CallerOf(*context);
  absl::StatusOr<weft::v1::NodeStatus> node = inventory_->Undrain(request->name(), caller.name);
  if (node.ok()) {
    WEFT_LOG(INFO) << "undrain requested node=" << request->name() << " who=" << caller.name
                   << " peer=" << context->peer();
    *response->mutable_node() = *std::move(node);
  }
  return FinishWith(context, node.status());
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListEvents(
    grpc::CallbackServerContext* context, const weft::v1::ListEventsRequest* request,
    weft::v1::ListEventsResponse* response) {
  if (request->since_us() < 0) {
    return FinishWith(context, absl::InvalidArgumentError(absl::StrCat(
                                   "ListEvents: since_us ", request->since_us(),
                                   " is before the Unix epoch; use 0 for no lower bound")));
  }
  *response = inventory_->ListEvents(*request);
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListRacks(
    grpc::CallbackServerContext* context, const weft::v1::ListRacksRequest* request,
    weft::v1::ListRacksResponse* response) {
  *response = inventory_->ListRacks(request->pod());
  return FinishWith(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* AdminServiceImpl::ListAudit(
    grpc::CallbackServerContext* context, const weft::v1::ListAuditRequest* request,
    weft::v1::ListAuditResponse* response) {
  if (audit_log_ == nullptr || clock_ == nullptr) {
    return FinishWith(context, absl::UnimplementedError(
                                   "ListAudit: this controller was built without an audit log"));
  }
  if (request->since_us() < 0) {
    return FinishWith(context, absl::InvalidArgumentError(absl::StrCat(
                                   "ListAudit: since_us ", request->since_us(),
                                   " is before the Unix epoch; use 0 for no lower bound")));
  }
  AuditQuery query;
  if (request->since_us() > 0) query.since = absl::FromUnixMicros(request->since_us());
  if (request->within_ms() > 0) {
    query.since = std::max(query.since, clock_->Now() - absl::Milliseconds(request->within_ms()));
  }
  query.who = request->who();
  query.method = request->method();
  query.limit = request->limit();
  absl::StatusOr<std::vector<AuditEntry>> entries = audit_log_->List(query);
  if (!entries.ok()) return FinishWith(context, entries.status());
  for (const AuditEntry& entry : *entries) {
    weft::v1::AuditLogEntry* out = response->add_entries();
    out->set_sequence(entry.sequence);
    out->set_time_us(absl::ToUnixMicros(entry.at));
    out->set_who(entry.who);
    out->set_role(entry.role);
    out->set_method(entry.method);
    out->set_target(entry.target);
    out->set_result(entry.result);
  }
  return FinishWith(context, absl::OkStatus());
}

}  // namespace weft::controller
