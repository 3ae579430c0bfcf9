// Fuzzes PlacementService.Place as a scheduler reaches it: the input is a serialized
// weft.v1.PlacementRequest (the gRPC payload), sent through the real service to the
// controller fixture (controller_fixture.h: 16 nodes, 4 racks, 2 pods, 8 GPUs each).
// Properties:
//   - a refusal is INVALID_ARGUMENT, FAILED_PRECONDITION or RESOURCE_EXHAUSTED with a
//     message (placement_service.h), never INTERNAL/UNKNOWN or a crash;
//   - a placement numbers its ranks 0..n-1, puts them only on registered nodes the
//     request did not exclude, gpus_per_node ranks per node at most, honours rank_count
//     or node_count, max_racks and single_pod, and its reservation can be released.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/algorithm/container.h"
#include "fuzz/controller_fixture.h"
#include "fuzz/fuzz_check.h"
#include "proto/weft/v1/placement.pb.h"

namespace {

using weft::v1::PlacementService;

void CheckPlacement(const weft::fuzz::ControllerFixture& controller,
                    const weft::v1::PlacementRequest& request,
                    const weft::v1::PlacementResponse& placed) {
  FUZZ_CHECK(!placed.reservation_id().empty());
  FUZZ_CHECK(placed.ranks_size() > 0) << placed.DebugString();
  const std::set<std::string> excluded(request.constraints().exclude_nodes().begin(),
                                       request.constraints().exclude_nodes().end());
  std::map<std::string, int> ranks_per_node;
  for (int i = 0; i < placed.ranks_size(); ++i) {
    const weft::v1::RankAssignment& rank = placed.ranks(i);
    FUZZ_CHECK(rank.rank() == static_cast<uint32_t>(i)) << placed.DebugString();
    FUZZ_CHECK(absl::c_linear_search(controller.node_names, rank.node())) << rank.node();
    FUZZ_CHECK(excluded.count(rank.node()) == 0) << "excluded node used: " << rank.node();
    ++ranks_per_node[rank.node()];
  }
  for (const auto& [node, ranks] : ranks_per_node) {
    FUZZ_CHECK(ranks <= 8) << node << " has " << ranks << " ranks";
    if (request.gpus_per_node() != 0) {
      FUZZ_CHECK(ranks == static_cast<int>(request.gpus_per_node())) << node;
    }
  }
  if (request.size_case() == weft::v1::PlacementRequest::kRankCount) {
    FUZZ_CHECK(placed.ranks_size() == static_cast<int>(request.rank_count()));
  }
  if (request.size_case() == weft::v1::PlacementRequest::kNodeCount) {
    FUZZ_CHECK(ranks_per_node.size() == request.node_count());
  }
  if (request.constraints().max_racks() != 0) {
    FUZZ_CHECK(placed.racks_used() <= request.constraints().max_racks());
  }
  if (request.constraints().single_pod()) FUZZ_CHECK(placed.pods_used() == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::ControllerFixture& controller = weft::fuzz::Controller();
  const std::optional<weft::v1::PlacementRequest> request =
      weft::fuzz::ParseRequest<weft::v1::PlacementRequest>(data, size);
  if (!request) return 0;
  PlacementService::Stub* stub = controller.placement_stub.get();

  weft::v1::PlacementResponse placed;
  const grpc::Status status =
      weft::fuzz::Call(stub, &PlacementService::Stub::Place, *request, &placed);
  if (!status.ok()) {
    const grpc::StatusCode code = status.error_code();
    FUZZ_CHECK(code == grpc::StatusCode::INVALID_ARGUMENT ||
               code == grpc::StatusCode::FAILED_PRECONDITION ||
               code == grpc::StatusCode::RESOURCE_EXHAUSTED)
        << "code " << code << ": " << status.error_message();
    FUZZ_CHECK(!status.error_message().empty()) << "code " << code;
    return 0;
  }
  CheckPlacement(controller, *request, placed);

  weft::v1::ReleaseRequest release;
  release.set_reservation_id(placed.reservation_id());
  weft::v1::ReleaseResponse released;
  const grpc::Status release_status =
      weft::fuzz::Call(stub, &PlacementService::Stub::Release, release, &released);
  FUZZ_CHECK(release_status.ok()) << release_status.error_message();
  return 0;
}
