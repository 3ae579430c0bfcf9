// JoinThroughAgent: a Job (datapath/job.h) whose ranks take their path from the node
// agent and meet through it. For a process started with WEFT_AGENT_SOCKET and
// WEFT_JOB_ID (and optionally WEFT_GPU, WEFT_QOS_CLASS):
//   1. ChoosePath on the agent socket: the RDMA device, port, RoCE v2 GID index and
//      traffic class for this rank's GPU and QoS class. Explicit WEFT_IB_HCA /
//      WEFT_IB_GID_INDEX still win. When the agent finds no usable RoCE port, the rank
//      offers no RDMA and the job runs over TCP, its transport choice saying why
//      (FAILED_PRECONDITION instead when WEFT_TRANSPORT=rc). Without an RDMA device in
//      this process (ibv_get_device_list finds none) the fallback is TCP as well.
//   2. The rendezvous is an AgentRendezvous (datapath/agent_rendezvous.h): the agent
//      relays it to the controller.
//   3. The transport and communicator are built as Job::Join builds them.
//
// Example:
//   ASSIGN_OR_RETURN(JobOptions options, JobOptions::FromEnvironment());
//   ASSIGN_OR_RETURN(std::unique_ptr<Job> job, JoinThroughAgent(options));
//
// This target links gRPC (//datapath:agent_job); //datapath:weft does not.
// Thread-safety: as Job::Join.
#ifndef WEFT_DATAPATH_AGENT_JOB_H_
#define WEFT_DATAPATH_AGENT_JOB_H_

#include <memory>

#include "absl/status/statusor.h"
#include "datapath/job.h"
#include "rdma/verbs.h"
#include "proto/weft/v1/job.pb.h"

namespace weft::datapath {

// What the agent said about this rank's path: its answer, or why there is none.
struct AgentPathChoice {
  bool chosen = false;
  weft::v1::ChoosePathResponse path;  // when chosen
  std::string no_rdma_reason;         // when not
};

// INVALID_ARGUMENT without options.agent_socket or options.job_id, or for a bad
// options.gpu; the agent's error for an unknown GPU or QoS class; the socket's error
// when there is no agent; then as Job::Join. `choice`, if given, receives step 1.
absl::StatusOr<std::unique_ptr<Job>> JoinThroughAgent(JobOptions options,
                                                      rdma::Verbs* verbs = nullptr,
                                                      AgentPathChoice* choice = nullptr);

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_AGENT_JOB_H_
