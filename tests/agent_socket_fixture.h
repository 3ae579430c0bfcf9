// Test fixture: the server side of the agent socket, in process. A real
// RendezvousService (what weft-controller serves) on 127.0.0.1:0 and one JobServer
// (what each weft-agent serves) per simulated node on its own Unix socket, all over
// real gRPC, so libweft's agent client runs against the real thing. testonly.
//
// Thread-safety: construct and destroy on one thread; the servers are thread-safe.
#ifndef WEFT_TESTS_AGENT_SOCKET_FIXTURE_H_
#define WEFT_TESTS_AGENT_SOCKET_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/job_service.h"
#include "agent/nic_backend.h"
#include "common/clock.h"
#include "controller/api/rendezvous_service.h"
#include "grpcpp/server.h"
#include "prometheus/registry.h"

namespace weft::testing {

class AgentSocketFixture {
 public:
  // Starts the controller side and one agent per entry of `nodes` (its inventory),
  // with sockets /tmp/weft-<pid>-<tag>-<i>.sock (short enough for sun_path).
  static absl::StatusOr<std::unique_ptr<AgentSocketFixture>> Start(
      const std::string& tag, std::vector<agent::NodeInventory> nodes);
  ~AgentSocketFixture();

  const std::string& socket(int node) const { return sockets_[node]; }
  controller::RendezvousServiceImpl& rendezvous() { return *rendezvous_; }

  // A node with `nics` ACTIVE RoCE NICs mlx5_<i> (RoCE v2 IPv4 GID at index 3, netdev
  // ens<i+1>np0) and one GPU per NIC, GPU i closest to NIC i.
  static agent::NodeInventory RoceNode(int nics);

 private:
  AgentSocketFixture() = default;

  RealClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<controller::RendezvousServiceImpl> rendezvous_;
  std::unique_ptr<grpc::Server> controller_;
  std::vector<agent::NodeInventory> nodes_;
  std::vector<std::unique_ptr<agent::JobServiceImpl>> services_;
  std::vector<std::unique_ptr<agent::JobServer>> servers_;
  std::vector<std::string> sockets_;
};

}  // namespace weft::testing

#endif  // WEFT_TESTS_AGENT_SOCKET_FIXTURE_H_
