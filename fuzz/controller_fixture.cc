#include "fuzz/controller_fixture.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "google/protobuf/stubs/logging.h"
#include "proto/weft/v1/node.pb.h"

namespace weft::fuzz {
namespace {

constexpr int kNodes = 16;
constexpr int kNodesPerRack = 4;
constexpr int kRacksPerPod = 2;
constexpr int kGpusPerNode = 8;

weft::v1::NodeInfo MakeNode(int index) {
  weft::v1::NodeInfo info;
  info.set_name(absl::StrFormat("node-%02d", index));
  const int rack = index / kNodesPerRack;
  info.set_rack(absl::StrFormat("rack-%d", rack));
  info.set_pod(absl::StrFormat("pod-%d", rack / kRacksPerPod));
  for (int i = 0; i < kGpusPerNode; ++i) {
    weft::v1::Nic* nic = info.add_nics();
    nic->set_device(absl::StrFormat("mlx5_%d", i));
    nic->set_port(1);
    nic->set_netdev(absl::StrFormat("ens%dnp0", i));
    info.add_gpus()->set_index(i);
  }
  return info;
}

}  // namespace

ControllerFixture::ControllerFixture()
    : metrics(registry),
      inventory(&clock, controller::InventoryOptions{}, &metrics),
      placement_metrics(registry),
      placement(&inventory, &clock, controller::PlacementOptions{}, &placement_metrics),
      admin_service(&inventory),
      placement_service(&placement) {
  // One log line per placement or drain would cost more than the call itself.
  SetMinLogLevel(LogLevel::kError);
  // Protobuf logs every string field with invalid UTF-8 it refuses to parse.
  google::protobuf::SetLogHandler(nullptr);
  for (int i = 0; i < kNodes; ++i) {
    const weft::v1::NodeInfo info = MakeNode(i);
    const auto registered = inventory.Register(info, 0);
    if (!registered.ok()) {
      std::fprintf(stderr, "fixture: Register(%s): %s\n", info.name().c_str(),
                   registered.status().ToString().c_str());
      std::abort();
    }
    node_names.push_back(info.name());
  }
  grpc::ServerBuilder builder;
  builder.RegisterService(&admin_service);
  builder.RegisterService(&placement_service);
  server = builder.BuildAndStart();
  if (server == nullptr) {
    std::fprintf(stderr, "fixture: the gRPC server did not start\n");
    std::abort();
  }
  std::shared_ptr<grpc::Channel> channel = server->InProcessChannel(grpc::ChannelArguments());
  admin = weft::v1::AdminService::NewStub(channel);
  placement_stub = weft::v1::PlacementService::NewStub(channel);
}

ControllerFixture& Controller() {
  static ControllerFixture* const fixture = new ControllerFixture();
  return *fixture;
}

}  // namespace weft::fuzz
