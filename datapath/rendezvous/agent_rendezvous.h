// The node agent's job socket, from libweft's side. AgentClient speaks
// weft.v1.JobService (proto/weft/v1/job.proto) over gRPC on the agent's Unix socket
// (agent/job_service.h): which NIC, GID and traffic class this rank should use, and
// the job's rendezvous, which the agent relays to the controller. AgentRendezvous is
// datapath's Rendezvous (datapath/rendezvous.h) over it, so ranks on different nodes
// meet knowing only their local agent's socket and the job's id.
//
// The agent's rendezvous is an exchange: every rank publishes one value under a key,
// and each receives all ranks' values once the last has published. So
// AgentRendezvous::Publish only records this rank's value, and Lookup sends it and
// waits for the others (the controller times the wait out naming the ranks that
// never arrived). ExchangeAll, which is how libweft uses a rendezvous, maps onto it
// one to one. Lookup of a key this rank did not publish is FAILED_PRECONDITION, and
// Publish for another rank INVALID_ARGUMENT: neither fits an exchange.
//
// These link gRPC and protobuf; the core of libweft (//datapath:weft) does not.
//
// Thread-safety: both classes are thread-safe; lookups of different keys may wait
// concurrently.
#ifndef WEFT_DATAPATH_RENDEZVOUS_AGENT_RENDEZVOUS_H_
#define WEFT_DATAPATH_RENDEZVOUS_AGENT_RENDEZVOUS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "datapath/rendezvous.h"
#include "grpcpp/channel.h"
#include "proto/weft/v1/job.grpc.pb.h"
#include "proto/weft/v1/job.pb.h"

namespace weft::datapath {

class AgentClient {
 public:
  // A client of the agent socket at `socket_path`. NOT_FOUND when nothing is there,
  // FAILED_PRECONDITION when it is not a socket: both say to check that weft-agent
  // runs on this node and what its job_socket is.
  static absl::StatusOr<std::unique_ptr<AgentClient>> Connect(const std::string& socket_path);

  // The agent's ChoosePath answer, or its error (NOT_FOUND unknown GPU,
  // INVALID_ARGUMENT unknown QoS class, FAILED_PRECONDITION no usable RoCE port);
  // UNAVAILABLE naming the socket when the agent does not answer.
  absl::StatusOr<weft::v1::ChoosePathResponse> ChoosePath(
      const weft::v1::ChoosePathRequest& request, absl::Duration timeout = absl::Seconds(30));

  // One rank's part of the exchange (job_id, key): every rank's value (index = rank)
  // once all `world_size` have published, or the controller's error (e.g.
  // DEADLINE_EXCEEDED naming the ranks that never arrived after `timeout`).
  absl::StatusOr<std::vector<std::string>> Rendezvous(const std::string& job_id,
                                                      const std::string& key, int rank,
                                                      int world_size,
                                                      const std::string& endpoint,
                                                      absl::Duration timeout);

  const std::string& socket_path() const { return socket_path_; }

 private:
  AgentClient(std::string socket_path, std::shared_ptr<grpc::Channel> channel);
  absl::Status Annotate(const grpc::Status& status) const;

  const std::string socket_path_;
  std::unique_ptr<weft::v1::JobService::Stub> stub_;
};

class AgentRendezvous : public Rendezvous {
 public:
  // This process is rank `rank` of `world_size` in job `job_id`.
  AgentRendezvous(std::unique_ptr<AgentClient> client, std::string job_id, int rank,
                  int world_size);

  absl::Status Publish(absl::string_view key, int rank, absl::string_view value) override;
  absl::StatusOr<std::vector<std::string>> Lookup(absl::string_view key,
                                                  absl::Span<const int> ranks,
                                                  absl::Duration timeout) override;

 private:
  const std::unique_ptr<AgentClient> client_;
  const std::string job_id_;
  const int rank_;
  const int world_size_;

  absl::Mutex mu_;
  std::map<std::string, std::string, std::less<>> published_ ABSL_GUARDED_BY(mu_);
  // Completed exchanges: every rank's value, index = rank.
  std::map<std::string, std::vector<std::string>, std::less<>> exchanged_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_RENDEZVOUS_AGENT_RENDEZVOUS_H_
