// Fuzzes the AdminService as weftctl reaches it: the first input byte picks the RPC
// (GetNode, DrainNode, UndrainNode, ListEvents, ListRacks, ListNodes), the rest is its
// serialized request, sent through the real service to the controller fixture
// (controller_fixture.h). Properties:
//   - an empty node name is INVALID_ARGUMENT, an unknown one NOT_FOUND, undraining a
//     node that is not drained FAILED_PRECONDITION; every refusal has a message;
//   - a drain answers the node DRAINED with the reason given ("no reason given" when
//     empty) and GetNode agrees; the fuzzer then undrains it, which must succeed;
//   - ListEvents refuses a negative since_us and accepts everything else.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/algorithm/container.h"
#include "fuzz/controller_fixture.h"
#include "fuzz/fuzz_check.h"
#include "proto/weft/v1/admin.pb.h"

namespace {

using weft::fuzz::Call;
using weft::fuzz::ControllerFixture;
using weft::fuzz::ParseRequest;
using Stub = weft::v1::AdminService::Stub;

enum class Rpc : uint8_t { kGetNode, kDrain, kUndrain, kListEvents, kListRacks, kListNodes };
constexpr int kRpcs = 6;

bool Known(const ControllerFixture& controller, const std::string& name) {
  return absl::c_linear_search(controller.node_names, name);
}

// What every call naming node `name` must get when it is empty or unknown.
void CheckNameRefusal(const ControllerFixture& controller, const std::string& name,
                      const grpc::Status& status) {
  if (name.empty()) {
    FUZZ_CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
        << status.error_code() << " " << status.error_message();
  } else if (!Known(controller, name)) {
    FUZZ_CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND)
        << status.error_code() << " " << status.error_message();
  }
  if (!status.ok()) FUZZ_CHECK(!status.error_message().empty()) << status.error_code();
}

void DrainThenUndrain(ControllerFixture& controller, const weft::v1::DrainNodeRequest& request) {
  weft::v1::DrainNodeResponse drained;
  const grpc::Status status = Call(controller.admin.get(), &Stub::DrainNode, request, &drained);
  CheckNameRefusal(controller, request.name(), status);
  if (!status.ok()) {
    FUZZ_CHECK(!Known(controller, request.name()))
        << "drain of a known node refused: " << status.error_message();
    return;
  }
  FUZZ_CHECK(drained.node().state() == weft::v1::NODE_STATE_DRAINED) << drained.DebugString();
  const std::string expected_reason =
      request.reason().empty() ? "no reason given" : request.reason();
  FUZZ_CHECK(drained.node().drain_reason() == expected_reason) << drained.DebugString();

  weft::v1::GetNodeRequest get;
  get.set_name(request.name());
  weft::v1::GetNodeResponse got;
  FUZZ_CHECK(Call(controller.admin.get(), &Stub::GetNode, get, &got).ok());
  FUZZ_CHECK(got.node().state() == weft::v1::NODE_STATE_DRAINED) << got.DebugString();

  weft::v1::UndrainNodeRequest undrain;
  undrain.set_name(request.name());
  weft::v1::UndrainNodeResponse undrained;
  const grpc::Status undrain_status =
      Call(controller.admin.get(), &Stub::UndrainNode, undrain, &undrained);
  FUZZ_CHECK(undrain_status.ok()) << undrain_status.error_message();
  FUZZ_CHECK(undrained.node().state() != weft::v1::NODE_STATE_DRAINED)
      << undrained.DebugString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Rpc rpc = static_cast<Rpc>(data[0] % kRpcs);
  const uint8_t* payload = data + 1;
  const size_t payload_size = size - 1;
  ControllerFixture& controller = weft::fuzz::Controller();
  Stub* admin = controller.admin.get();

  if (rpc == Rpc::kGetNode) {
    const auto request = ParseRequest<weft::v1::GetNodeRequest>(payload, payload_size);
    if (!request) return 0;
    weft::v1::GetNodeResponse response;
    const grpc::Status status = Call(admin, &Stub::GetNode, *request, &response);
    CheckNameRefusal(controller, request->name(), status);
    if (status.ok()) FUZZ_CHECK(response.node().info().name() == request->name());
  } else if (rpc == Rpc::kDrain) {
    const auto request = ParseRequest<weft::v1::DrainNodeRequest>(payload, payload_size);
    if (!request) return 0;
    DrainThenUndrain(controller, *request);
  } else if (rpc == Rpc::kUndrain) {
    const auto request = ParseRequest<weft::v1::UndrainNodeRequest>(payload, payload_size);
    if (!request) return 0;
    weft::v1::UndrainNodeResponse response;
    const grpc::Status status = Call(admin, &Stub::UndrainNode, *request, &response);
    CheckNameRefusal(controller, request->name(), status);
    // Every input leaves all nodes undrained, so a known node is never drained here.
    if (Known(controller, request->name())) {
      FUZZ_CHECK(status.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
          << status.error_code() << " " << status.error_message();
    }
  } else if (rpc == Rpc::kListEvents) {
    const auto request = ParseRequest<weft::v1::ListEventsRequest>(payload, payload_size);
    if (!request) return 0;
    weft::v1::ListEventsResponse response;
    const grpc::Status status = Call(admin, &Stub::ListEvents, *request, &response);
    if (request->since_us() < 0) {
      FUZZ_CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
          << status.error_code();
    } else {
      FUZZ_CHECK(status.ok()) << status.error_message();
    }
  } else if (rpc == Rpc::kListRacks) {
    const auto request = ParseRequest<weft::v1::ListRacksRequest>(payload, payload_size);
    if (!request) return 0;
    weft::v1::ListRacksResponse response;
    FUZZ_CHECK(Call(admin, &Stub::ListRacks, *request, &response).ok());
  } else {
    const auto request = ParseRequest<weft::v1::ListNodesRequest>(payload, payload_size);
    if (!request) return 0;
    weft::v1::ListNodesResponse response;
    FUZZ_CHECK(Call(admin, &Stub::ListNodes, *request, &response).ok());
    if (request->rack().empty()) {
      FUZZ_CHECK(response.nodes_size() == static_cast<int>(controller.node_names.size()));
    }
  }
  return 0;
}
