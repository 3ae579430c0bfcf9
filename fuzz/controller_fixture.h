// The controller as the RPC fuzzers see it: an Inventory with 16 registered nodes
// (4 racks of 4 in 2 pods; 8 GPUs and 8 RDMA NICs each), the PlacementManager over a
// FakeClock, and the real AdminService and PlacementService on a gRPC server reached
// through an in-process channel, so every request crosses gRPC's (de)serialization and
// the same handler code as over TCP. Built once per process and never destroyed (the
// fuzzer runs until killed). Each input must leave it as it found it: a placement is
// released, a drain undone. Logging is limited to errors. Fuzz targets only.
#ifndef WEFT_FUZZ_CONTROLLER_FIXTURE_H_
#define WEFT_FUZZ_CONTROLLER_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "controller/api/admin_service.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "controller/placement/placement_manager.h"
#include "controller/placement/placement_metrics.h"
#include "controller/api/placement_service.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/admin.grpc.pb.h"
#include "proto/weft/v1/placement.grpc.pb.h"

namespace weft::fuzz {

struct ControllerFixture {
  ControllerFixture();

  // Names of the registered nodes, "node-00" .. "node-15".
  std::vector<std::string> node_names;

  FakeClock clock;
  prometheus::Registry registry;
  controller::ControllerMetrics metrics;
  controller::Inventory inventory;
  controller::PlacementMetrics placement_metrics;
  controller::PlacementManager placement;
  controller::AdminServiceImpl admin_service;
  controller::PlacementServiceImpl placement_service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<weft::v1::AdminService::Stub> admin;
  std::unique_ptr<weft::v1::PlacementService::Stub> placement_stub;
};

// The process's fixture, built on first use.
ControllerFixture& Controller();

// Calls unary `rpc` of `stub` with a fresh ClientContext, e.g.
//   Call(controller.admin.get(), &AdminService::Stub::GetNode, request, &response).
template <typename Stub, typename Request, typename Response>
grpc::Status Call(Stub* stub,
                  grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&, Response*),
                  const Request& request, Response* response) {
  grpc::ClientContext context;
  return (stub->*rpc)(&context, request, response);
}

// `bytes` parsed as a Request; nullopt when they are none (gRPC refuses such a payload
// before any Weft code runs).
template <typename Request>
std::optional<Request> ParseRequest(const uint8_t* bytes, size_t size) {
  Request request;
  if (!request.ParseFromArray(bytes, static_cast<int>(size))) return std::nullopt;
  return request;
}

}  // namespace weft::fuzz

#endif  // WEFT_FUZZ_CONTROLLER_FIXTURE_H_
