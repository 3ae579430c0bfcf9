// Job: libweft's front door for a training process. It reads where the process stands
// in the job (rank, size, the rendezvous address) from its options or the
// environment, meets the other ranks, picks the transport (RC where every node has an
// RDMA device, TCP otherwise), and hands back a Communicator.
//
// Environment (JobOptions::FromEnvironment):
//   WEFT_RANK, WEFT_WORLD_SIZE   this process's rank and the number of ranks (required)
//   WEFT_RENDEZVOUS              host:port of the rendezvous store (required when
//                                WEFT_WORLD_SIZE > 1 and there is no agent socket);
//                                rank 0 hosts it there
//   WEFT_AGENT_SOCKET            the node agent's job socket (e.g. /run/weft/agent.sock):
//                                ranks meet through the agents and the controller
//                                instead of a store, and the agent picks the NIC, GID and
//                                traffic class; join with JoinThroughAgent
//                                (datapath/agent_job.h)
//   WEFT_JOB_ID                  the job's id, unique per run (required with an agent
//                                socket)
//   WEFT_GPU                     the GPU this rank drives, index or PCI address (the
//                                agent then prefers the NIC closest to it)
//   WEFT_TRANSPORT               auto (default), rc or tcp
//   WEFT_QOS_CLASS               training (default), storage or control
//   WEFT_IB_HCA                  RDMA device to use, e.g. mlx5_0 (default: first active)
//   WEFT_IB_GID_INDEX            fixed GID index (default: the RoCE v2 IPv4 GID)
//   WEFT_IB_NETDEV               the netdev whose RoCE v2 IPv4 GID to use, e.g. ens1np0
//                                (default: the port's lowest-index one, whichever
//                                netdev; set it where VLAN or macvlan netdevs add GIDs)
//   WEFT_SOCKET_HOST             address this rank's TCP transport listens on
//                                (default 127.0.0.1; set it on multi-node jobs)
//   WEFT_SCOPE                   rendezvous key prefix (default "weft")
// Without an agent socket the NIC, GID and class come from the variables above.
//
// Example:
//   ASSIGN_OR_RETURN(JobOptions options, JobOptions::FromEnvironment());
//   ASSIGN_OR_RETURN(std::unique_ptr<Job> job, Job::Join(options));
//   RETURN_IF_ERROR(job->communicator().AllReduce(grads, n, DataType::kFloat32,
//                                                 ReduceOp::kSum));
//
// Thread-safety: Join is thread-safe; a Job's communicator is (see collectives.h).
#ifndef WEFT_DATAPATH_JOB_H_
#define WEFT_DATAPATH_JOB_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "datapath/collectives.h"
#include "datapath/rendezvous/tcp_rendezvous.h"
#include "datapath/transport/transport_factory.h"
#include "rdma/verbs.h"

namespace weft::datapath {

struct JobOptions {
  int rank = 0;
  int size = 1;
  // host:port of the TCP rendezvous store; unused for a single-rank job.
  std::string rendezvous_address;
  // Whether this process hosts the store (by default rank 0 does).
  std::optional<bool> host_rendezvous;
  TransportKind transport = TransportKind::kAuto;
  std::string qos_class;
  std::string device;
  uint32_t port = 1;  // of `device`
  std::optional<uint32_t> gid_index;
  uint32_t netdev_ifindex = 0;  // the GID's netdev (0: any)
  std::string socket_host = "127.0.0.1";
  std::string scope = "weft";
  // With an agent socket (datapath/agent_job.h): where it is, the job's id, the GPU.
  std::string agent_socket;
  std::string job_id;
  std::string gpu;
  // Set by JoinThroughAgent from the agent's answer: the traffic class to use (instead
  // of the QoS class's), or why this rank offers no RDMA.
  std::optional<uint8_t> traffic_class;
  std::string no_rdma_reason;
  absl::Duration connect_timeout = absl::Seconds(300);
  CommunicatorOptions communicator;

  // Reads the WEFT_* variables above through `getenv` (the process environment by
  // default). INVALID_ARGUMENT naming the variable, its value and what is accepted.
  static absl::StatusOr<JobOptions> FromEnvironment(
      const std::function<const char*(const char*)>& getenv = nullptr);
};

class Job {
 public:
  // Meets the other ranks through the TCP store at options.rendezvous_address and
  // builds the communicator over `verbs` (the real libibverbs when null).
  // FAILED_PRECONDITION when options.agent_socket is set (that needs
  // JoinThroughAgent, which links gRPC).
  static absl::StatusOr<std::unique_ptr<Job>> Join(const JobOptions& options,
                                                   rdma::Verbs* verbs = nullptr);
  // The same over a rendezvous the caller built (e.g. datapath/agent_rendezvous.h);
  // the Job owns it from here on.
  static absl::StatusOr<std::unique_ptr<Job>> JoinWith(const JobOptions& options,
                                                       std::unique_ptr<Rendezvous> rendezvous,
                                                       rdma::Verbs* verbs = nullptr);
  ~Job();

  Communicator& communicator() { return *communicator_; }
  // What transport was picked and why.
  const TransportChoice& transport_choice() const { return choice_; }

 private:
  Job() = default;
  static absl::StatusOr<std::unique_ptr<Job>> Build(const JobOptions& options,
                                                    std::unique_ptr<TcpRendezvousServer> server,
                                                    std::unique_ptr<Rendezvous> rendezvous,
                                                    rdma::Verbs* verbs);

  std::unique_ptr<rdma::Verbs> owned_verbs_;
  std::unique_ptr<TcpRendezvousServer> server_;
  std::unique_ptr<Rendezvous> rendezvous_;
  std::unique_ptr<Communicator> communicator_;
  TransportChoice choice_;
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_JOB_H_
