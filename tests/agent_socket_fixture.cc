#include "tests/agent_socket_fixture.h"

#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"

namespace weft::testing {

absl::StatusOr<std::unique_ptr<AgentSocketFixture>> AgentSocketFixture::Start(
    const std::string& tag, std::vector<agent::NodeInventory> nodes) {
  std::unique_ptr<AgentSocketFixture> f(new AgentSocketFixture());
  f->rendezvous_ = std::make_unique<controller::RendezvousServiceImpl>(&f->clock_, f->registry_);
  f->rendezvous_->Start();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(f->rendezvous_.get());
  f->controller_ = builder.BuildAndStart();
  if (f->controller_ == nullptr || port == 0) {
    return absl::UnavailableError("cannot start the rendezvous service on 127.0.0.1:0");
  }
  const std::string controller = absl::StrCat("127.0.0.1:", port);
  f->nodes_ = std::move(nodes);
  for (size_t i = 0; i < f->nodes_.size(); ++i) {
    const agent::NodeInventory* inventory = &f->nodes_[i];
    f->services_.push_back(std::make_unique<agent::JobServiceImpl>(
        agent::JobServiceOptions{absl::StrCat("node-", i), controller},
        [inventory] { return *inventory; },
        grpc::CreateChannel(controller, grpc::InsecureChannelCredentials())));
    f->sockets_.push_back(absl::StrCat("/tmp/weft-", getpid(), "-", tag, "-", i, ".sock"));
    ASSIGN_OR_RETURN(std::unique_ptr<agent::JobServer> server,
                     agent::JobServer::Start(f->sockets_.back(), f->services_.back().get()));
    f->servers_.push_back(std::move(server));
  }
  return f;
}

AgentSocketFixture::~AgentSocketFixture() {
  servers_.clear();
  if (rendezvous_ != nullptr) rendezvous_->Stop();
  if (controller_ != nullptr) controller_->Shutdown();
}

agent::NodeInventory AgentSocketFixture::RoceNode(int nics) {
  agent::NodeInventory inventory;
  for (int i = 0; i < nics; ++i) {
    weft::v1::Nic& nic = inventory.nics.emplace_back();
    nic.set_device(absl::StrCat("mlx5_", i));
    nic.set_port(1);
    nic.set_netdev(absl::StrCat("ens", i + 1, "np0"));
    nic.set_link_layer("Ethernet");
    nic.set_state(weft::v1::PORT_STATE_ACTIVE);
    weft::v1::GidEntry* gid = nic.add_gids();
    gid->set_index(3);
    gid->set_gid(absl::StrCat("0000:0000:0000:0000:0000:ffff:0a0", i, ":0001"));
    gid->set_type(weft::v1::GID_TYPE_ROCE_V2);
    gid->set_netdev(nic.netdev());
    weft::v1::Gpu& gpu = inventory.gpus.emplace_back();
    gpu.set_index(i);
    gpu.set_pci_address(absl::StrCat("0000:", 10 + i, ":00.0"));
    gpu.set_closest_nic(nic.device());
  }
  return inventory;
}

}  // namespace weft::testing
