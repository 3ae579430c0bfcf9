#include "controller/admin_service.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "controller/grpc_status.h"

namespace weft::controller {
namespace {

grpc::ServerUnaryReactor* FinishWith(grpc::CallbackServerContext* context,
                                     const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

absl::Status RequireName(absl::string_view rpc, const std::string& name) {
  if (!name.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(rpc, ": the node name is empty"));
}

}  // namespace

AdminServiceImpl::AdminServiceImpl(Inventory* inventory) : inventory_(inventory) {}

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
  absl::StatusOr<weft::v1::NodeStatus> node =
      inventory_->Drain(request->name(), request->reason());
  if (node.ok()) {
    WEFT_LOG(INFO) << "drain requested node=" << request->name()
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
  absl::StatusOr<weft::v1::NodeStatus> node = inventory_->Undrain(request->name());
  if (node.ok()) {
    WEFT_LOG(INFO) << "undrain requested node=" << request->name()
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

}  // namespace weft::controller
