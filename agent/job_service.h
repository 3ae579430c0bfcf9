// The agent's job socket: weft.v1.JobService (job.proto) served over gRPC on a
// Unix-domain socket (AgentConfig.job_socket, default /run/weft/agent.sock) to the
// processes of the jobs on this node; libweft is the client
// (datapath/rendezvous/agent_rendezvous.h).
//
//   ChoosePath  answered here from the agent's discovered inventory
//               (agent/job_path.h: GPU-affine NIC, RoCE v2 GID, traffic class).
//   Rendezvous  relayed to the controller's RendezvousService over the agent's
//               channel to the controller, with this node's name added; the
//               controller's answer or error comes back unchanged. A controller that
//               cannot be reached is UNAVAILABLE naming its address.
//
// JobServiceImpl is the callback-API adapter; handlers never block (a relayed call
// waits in gRPC, not on a thread). JobServer owns the gRPC server on the socket: it
// refuses to take over a socket another process still serves, replaces a stale one,
// makes it read-writable by every local user (any job on the node may ask), and
// removes it when stopped.
//
// Thread-safety: both are thread-safe; the inventory source is called from gRPC
// threads.
#ifndef WEFT_AGENT_JOB_SERVICE_H_
#define WEFT_AGENT_JOB_SERVICE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/nic_backend.h"
#include "grpcpp/grpcpp.h"
#include "proto/weft/v1/job.grpc.pb.h"
#include "proto/weft/v1/job.pb.h"

namespace weft::agent {

// The node as the agent sees it now (Agent::inventory()).
using InventorySource = std::function<NodeInventory()>;

struct JobServiceOptions {
  std::string node_name;
  // For error messages: where `controller` points.
  std::string controller_address;
  // Added to a rendezvous' own timeout for the relayed call's deadline, so the
  // controller's DEADLINE_EXCEEDED (naming the missing ranks) arrives first.
  absl::Duration relay_slack = absl::Seconds(5);
};

class JobServiceImpl final : public weft::v1::JobService::CallbackService {
 public:
  // `controller` is the agent's channel to the controller.
  JobServiceImpl(JobServiceOptions options, InventorySource inventory,
                 std::shared_ptr<grpc::ChannelInterface> controller);

  grpc::ServerUnaryReactor* ChoosePath(grpc::CallbackServerContext* context,
                                       const weft::v1::ChoosePathRequest* request,
                                       weft::v1::ChoosePathResponse* response) override;
  grpc::ServerUnaryReactor* Rendezvous(grpc::CallbackServerContext* context,
                                       const weft::v1::RendezvousRequest* request,
                                       weft::v1::RendezvousResponse* response) override;

 private:
  class RelayReactor;

  const JobServiceOptions options_;
  const InventorySource inventory_;
  const std::unique_ptr<weft::v1::RendezvousService::Stub> controller_;
};

class JobServer {
 public:
  // Serves `service` (which must outlive the server) on the Unix socket `path`,
  // creating its directory (0755) if missing. FAILED_PRECONDITION when another
  // process answers on `path` or it is not a socket; INVALID_ARGUMENT for a path of
  // 108 bytes or more; UNAVAILABLE when gRPC cannot listen there.
  static absl::StatusOr<std::unique_ptr<JobServer>> Start(const std::string& path,
                                                          JobServiceImpl* service);
  ~JobServer();  // Stops serving (waiting relays are cancelled) and removes the socket.

  JobServer(const JobServer&) = delete;
  JobServer& operator=(const JobServer&) = delete;

  const std::string& path() const { return path_; }

 private:
  JobServer(std::string path, std::unique_ptr<grpc::Server> server)
      : path_(std::move(path)), server_(std::move(server)) {}

  const std::string path_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_JOB_SERVICE_H_
