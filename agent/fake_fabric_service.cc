#include "agent/fake_fabric_service.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace weft::agent {

void FakeFabricService::set_node(weft::v1::ReadNodeResponse node) {
  absl::MutexLock lock(&mu_);
  node_ = std::move(node);
}

void FakeFabricService::set_set_tunables_error(grpc::Status error) {
  absl::MutexLock lock(&mu_);
  set_tunables_error_ = std::move(error);
}

std::vector<weft::v1::SetNicTunablesRequest> FakeFabricService::set_requests() const {
  absl::MutexLock lock(&mu_);
  return set_requests_;
}

int FakeFabricService::read_node_calls() const {
  absl::MutexLock lock(&mu_);
  return read_node_calls_;
}

grpc::Status FakeFabricService::ReadNode(grpc::ServerContext*,
                                         const weft::v1::ReadNodeRequest* request,
                                         weft::v1::ReadNodeResponse* response) {
  absl::MutexLock lock(&mu_);
  ++read_node_calls_;
  if (request->node() != node_.node()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no node '", request->node(), "' in the twin"));
  }
  *response = node_;
  return grpc::Status::OK;
}

grpc::Status FakeFabricService::SetNicTunables(grpc::ServerContext*,
                                               const weft::v1::SetNicTunablesRequest* request,
                                               weft::v1::SetNicTunablesResponse*) {
  absl::MutexLock lock(&mu_);
  if (!set_tunables_error_.ok()) return set_tunables_error_;
  set_requests_.push_back(*request);
  // As the twin: the NIC has the written state from now on, in later ReadNode answers.
  for (weft::v1::FabricNic& nic : *node_.mutable_nics()) {
    if (request->node() != node_.node() || nic.nic().device() != request->device()) continue;
    *nic.mutable_tunables()->mutable_qos() = request->qos();
    *nic.mutable_tunables()->mutable_dcqcn() = request->dcqcn();
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("no NIC '", request->device(), "' on node '", request->node(), "'"));
}

FakeFabricServer::FakeFabricServer() {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  address_ = absl::StrCat("127.0.0.1:", port);
}

FakeFabricServer::~FakeFabricServer() { Shutdown(); }

void FakeFabricServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
}

}  // namespace weft::agent
