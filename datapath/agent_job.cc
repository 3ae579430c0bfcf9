#include "datapath/agent_job.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "datapath/rendezvous/agent_rendezvous.h"

namespace weft::datapath {

using rdma::Verbs;

namespace {

absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

// WEFT_GPU: an index ("3") or a PCI address ("0000:1b:00.0").
absl::Status SetGpu(absl::string_view gpu, weft::v1::ChoosePathRequest* request) {
  if (gpu.empty()) return absl::OkStatus();
  uint32_t index = 0;
  if (absl::SimpleAtoi(gpu, &index)) {
    request->set_gpu_index(index);
  } else if (gpu.find(':') != absl::string_view::npos) {
    request->set_gpu_pci_address(std::string(gpu));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "WEFT_GPU='", gpu, "' is not valid; accepted: a GPU index or a PCI address such as "
                           "0000:1b:00.0"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Job>> JoinThroughAgent(JobOptions options, Verbs* verbs,
                                                      AgentPathChoice* choice_out) {
  if (options.agent_socket.empty() || options.job_id.empty()) {
    return absl::InvalidArgumentError(
        "joining through the node agent needs its socket (WEFT_AGENT_SOCKET) and the job's id "
        "(WEFT_JOB_ID)");
  }
  weft::v1::ChoosePathRequest request;
  RETURN_IF_ERROR(SetGpu(options.gpu, &request));
  request.set_qos_class(options.qos_class);
  ASSIGN_OR_RETURN(std::unique_ptr<AgentClient> client, AgentClient::Connect(options.agent_socket));

  AgentPathChoice choice;
  if (options.transport != TransportKind::kTcp) {
    absl::StatusOr<weft::v1::ChoosePathResponse> path = client->ChoosePath(request);
    if (path.ok()) {
      choice.chosen = true;
      choice.path = *path;
      if (options.device.empty()) {
        options.device = path->device();
        options.port = path->port();
      }
      if (!options.gid_index.has_value() && options.device == path->device()) {
        options.gid_index = path->gid_index();
      }
      options.traffic_class = static_cast<uint8_t>(path->traffic_class());
      WEFT_LOG(INFO) << "rank=" << options.rank << " agent path device=" << path->device()
                     << " port=" << path->port() << " netdev=" << path->netdev()
                     << " gid_index=" << path->gid_index() << " qos_class=" << path->qos_class()
                     << " traffic_class=" << path->traffic_class() << " reason=\""
                     << path->reason() << "\"";
    } else if (path.status().code() == absl::StatusCode::kFailedPrecondition) {
      choice.no_rdma_reason = absl::StrCat("the node agent offers no RDMA path: ",
                                           path.status().message());
      options.no_rdma_reason = choice.no_rdma_reason;
      WEFT_LOG(INFO) << "rank=" << options.rank << " " << choice.no_rdma_reason;
    } else {
      return Annotate(path.status(), "asking the node agent for this rank's path");
    }
  }
  if (choice_out != nullptr) *choice_out = choice;
  auto rendezvous = std::make_unique<AgentRendezvous>(std::move(client), options.job_id,
                                                      options.rank, options.size);
  return Job::JoinWith(options, std::move(rendezvous), verbs);
}

}  // namespace weft::datapath
