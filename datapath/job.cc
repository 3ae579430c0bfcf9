#include "datapath/job.h"

#include <net/if.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "datapath/rendezvous/in_process_rendezvous.h"
#include "datapath/transport/socket_util.h"
#include "rdma/verbs_ibv.h"

namespace weft::datapath {

using rdma::IbvVerbs;
using rdma::Verbs;

namespace {

absl::Status BadVariable(absl::string_view name, absl::string_view value,
                         absl::string_view accepted) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, "='", value, "' is not valid; accepted: ", accepted));
}

}  // namespace

absl::StatusOr<JobOptions> JobOptions::FromEnvironment(
    const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const char* name) -> const char* {
    return getenv_fn ? getenv_fn(name) : std::getenv(name);
  };
  JobOptions options;
  const char* rank = get("WEFT_RANK");
  const char* size = get("WEFT_WORLD_SIZE");
  if (rank == nullptr || size == nullptr) {
    return absl::InvalidArgumentError(
        "WEFT_RANK and WEFT_WORLD_SIZE must both be set (this process's rank and the number "
        "of ranks)");
  }
  if (!absl::SimpleAtoi(size, &options.size) || options.size < 1) {
    return BadVariable("WEFT_WORLD_SIZE", size, "a positive integer");
  }
  if (!absl::SimpleAtoi(rank, &options.rank) || options.rank < 0 || options.rank >= options.size) {
    return BadVariable("WEFT_RANK", rank, absl::StrCat("an integer from 0 to ", options.size - 1));
  }
  if (const char* v = get("WEFT_AGENT_SOCKET")) {
    if (v[0] != '/') return BadVariable("WEFT_AGENT_SOCKET", v, "an absolute path");
    options.agent_socket = v;
    const char* job_id = get("WEFT_JOB_ID");
    if (job_id == nullptr || job_id[0] == '\0') {
      return absl::InvalidArgumentError(
          "WEFT_JOB_ID must name the job (the same for all its ranks, unique per run) when "
          "WEFT_AGENT_SOCKET is set");
    }
    options.job_id = job_id;
  }
  if (const char* v = get("WEFT_GPU")) options.gpu = v;
  if (const char* v = get("WEFT_RENDEZVOUS")) {
    if (!ParseHostPort(v).ok()) return BadVariable("WEFT_RENDEZVOUS", v, "host:port");
    options.rendezvous_address = v;
  } else if (options.size > 1 && options.agent_socket.empty()) {
    return absl::InvalidArgumentError(
        "WEFT_RENDEZVOUS must name the rendezvous store (host:port, hosted by rank 0), or "
        "WEFT_AGENT_SOCKET the node agent's job socket");
  }
  if (const char* v = get("WEFT_TRANSPORT")) {
    absl::StatusOr<TransportKind> kind = ParseTransportKind(v);
    if (!kind.ok()) return BadVariable("WEFT_TRANSPORT", v, "auto, rc, tcp");
    options.transport = *kind;
  }
  if (const char* v = get("WEFT_QOS_CLASS")) options.qos_class = v;
  if (const char* v = get("WEFT_IB_HCA")) options.device = v;
  if (const char* v = get("WEFT_IB_GID_INDEX")) {
    uint32_t index = 0;
    if (!absl::SimpleAtoi(v, &index) || index > 255) {
      return BadVariable("WEFT_IB_GID_INDEX", v, "an integer from 0 to 255");
    }
    options.gid_index = index;
  }
  if (const char* v = get("WEFT_IB_NETDEV")) {
    const unsigned index = ::if_nametoindex(v);
    if (index == 0) {
      return BadVariable("WEFT_IB_NETDEV", v, "the name of a network interface on this host");
    }
    options.netdev_ifindex = index;
  }
  if (const char* v = get("WEFT_SOCKET_HOST")) options.socket_host = v;
  if (const char* v = get("WEFT_SCOPE")) options.scope = v;
  return options;
}

absl::StatusOr<std::unique_ptr<Job>> Job::Join(const JobOptions& options, Verbs* verbs) {
  if (!options.agent_socket.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the job is to meet through the agent socket ", options.agent_socket,
        " (WEFT_AGENT_SOCKET): join with JoinThroughAgent (datapath/agent_job.h, target "
        "//datapath:agent_job), or unset it to use a TCP store"));
  }
  std::unique_ptr<TcpRendezvousServer> server;
  std::unique_ptr<Rendezvous> rendezvous;
  if (options.size == 1) {
    rendezvous = std::make_unique<InProcessRendezvous>();
  } else {
    ASSIGN_OR_RETURN(HostPort address, ParseHostPort(options.rendezvous_address));
    if (options.host_rendezvous.value_or(options.rank == 0)) {
      ASSIGN_OR_RETURN(server, TcpRendezvousServer::Start(address.host, address.port));
      address.port = server->port();
    }
    ASSIGN_OR_RETURN(rendezvous, TcpRendezvousClient::Connect(address, options.connect_timeout));
  }
  return Build(options, std::move(server), std::move(rendezvous), verbs);
}

absl::StatusOr<std::unique_ptr<Job>> Job::JoinWith(const JobOptions& options,
                                                   std::unique_ptr<Rendezvous> rendezvous,
                                                   Verbs* verbs) {
  return Build(options, nullptr, std::move(rendezvous), verbs);
}

absl::StatusOr<std::unique_ptr<Job>> Job::Build(const JobOptions& options,
                                                std::unique_ptr<TcpRendezvousServer> server,
                                                std::unique_ptr<Rendezvous> rendezvous,
                                                Verbs* verbs) {
  std::unique_ptr<Job> job(new Job());
  job->server_ = std::move(server);
  job->rendezvous_ = std::move(rendezvous);
  if (verbs == nullptr) {
    job->owned_verbs_ = std::make_unique<IbvVerbs>();
    verbs = job->owned_verbs_.get();
  }
  TransportRequest request;
  request.rank = options.rank;
  request.size = options.size;
  request.kind = options.transport;
  request.qos_class = options.qos_class;
  request.traffic_class = options.traffic_class;
  request.no_rdma_reason = options.no_rdma_reason;
  request.scope = options.scope;
  request.rc.path.device = options.device;
  request.rc.path.port = options.port;
  request.rc.path.gid_index = options.gid_index;
  request.rc.path.netdev_ifindex = options.netdev_ifindex;
  request.rc.connect_timeout = options.connect_timeout;
  request.tcp.listen_host = options.socket_host;
  request.tcp.connect_timeout = options.connect_timeout;
  ASSIGN_OR_RETURN(job->communicator_, CreateCommunicator(*verbs, *job->rendezvous_, request,
                                                          options.communicator, &job->choice_));
  return job;
}

Job::~Job() {
  // The communicator first: its transport may still talk to the rendezvous' peers.
  communicator_.reset();
  rendezvous_.reset();
  server_.reset();
}

}  // namespace weft::datapath
