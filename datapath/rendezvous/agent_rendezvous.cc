#include "datapath/rendezvous/agent_rendezvous.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace weft::datapath {
namespace {

// Added to a rendezvous' own timeout for the call's deadline: the agent adds its own
// slack below this, so the controller's DEADLINE_EXCEEDED (naming the missing ranks)
// arrives before gRPC's bare one.
constexpr absl::Duration kRendezvousSlack = absl::Seconds(10);
// The controller's accepted range of timeout_ms.
constexpr absl::Duration kMaxTimeout = absl::Hours(1);

}  // namespace

absl::StatusOr<std::unique_ptr<AgentClient>> AgentClient::Connect(const std::string& socket_path) {
  struct stat st {};
  if (stat(socket_path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(
        "no node agent socket at ", socket_path,
        ": is weft-agent running on this node, and is that its job_socket?"));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        socket_path, " is not a socket: check weft-agent's job_socket on this node"));
  }
  return std::unique_ptr<AgentClient>(new AgentClient(
      socket_path, grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials())));
}

AgentClient::AgentClient(std::string socket_path, std::shared_ptr<grpc::Channel> channel)
    : socket_path_(std::move(socket_path)), stub_(weft::v1::JobService::NewStub(channel)) {}

absl::Status AgentClient::Annotate(const grpc::Status& status) const {
  absl::Status converted = FromGrpcStatus(status);
  // UNAVAILABLE from the agent itself about the controller already says so.
  if (converted.code() == absl::StatusCode::kUnavailable &&
      !absl::StartsWith(converted.message(), "the controller at")) {
    return absl::UnavailableError(absl::StrCat("the node agent at ", socket_path_,
                                               " does not answer: ", converted.message()));
  }
  return converted;
}

absl::StatusOr<weft::v1::ChoosePathResponse> AgentClient::ChoosePath(
    const weft::v1::ChoosePathRequest& request, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  weft::v1::ChoosePathResponse response;
  const grpc::Status status = stub_->ChoosePath(&context, request, &response);
  if (!status.ok()) return Annotate(status);
  return response;
}

absl::StatusOr<std::vector<std::string>> AgentClient::Rendezvous(
    const std::string& job_id, const std::string& key, int rank, int world_size,
    const std::string& endpoint, absl::Duration timeout) {
  timeout = std::clamp(timeout, absl::Milliseconds(1), kMaxTimeout);
  weft::v1::RendezvousRequest request;
  request.set_job_id(job_id);
  request.set_key(key);
  request.set_rank(static_cast<uint32_t>(rank));
  request.set_world_size(static_cast<uint32_t>(world_size));
  request.set_endpoint(endpoint);
  request.set_timeout_ms(static_cast<uint32_t>(absl::ToInt64Milliseconds(timeout)));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout + kRendezvousSlack));
  weft::v1::RendezvousResponse response;
  const grpc::Status status = stub_->Rendezvous(&context, request, &response);
  if (!status.ok()) return Annotate(status);
  if (response.endpoints_size() != world_size) {
    return absl::InternalError(absl::StrCat("rendezvous job '", job_id, "' key '", key,
                                            "': the agent returned ", response.endpoints_size(),
                                            " endpoints for ", world_size, " ranks"));
  }
  return std::vector<std::string>(response.endpoints().begin(), response.endpoints().end());
}

AgentRendezvous::AgentRendezvous(std::unique_ptr<AgentClient> client, std::string job_id,
                                 int rank, int world_size)
    : client_(std::move(client)), job_id_(std::move(job_id)), rank_(rank),
      world_size_(world_size) {}

absl::Status AgentRendezvous::Publish(absl::string_view key, int rank, absl::string_view value) {
  if (rank != rank_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rendezvous '", key, "': this process is rank ", rank_,
        " and the agent rendezvous publishes only its own value, not rank ", rank, "'s"));
  }
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = published_.emplace(std::string(key), std::string(value));
  if (!inserted && it->second != value) {
    return absl::AlreadyExistsError(absl::StrCat("rendezvous '", key, "': rank ", rank,
                                                 " already published a different value"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> AgentRendezvous::Lookup(absl::string_view key,
                                                                 absl::Span<const int> ranks,
                                                                 absl::Duration timeout) {
  for (int rank : ranks) {
    if (rank < 0 || rank >= world_size_) {
      return absl::InvalidArgumentError(absl::StrCat("rendezvous '", key, "': rank ", rank,
                                                     " is not in the job (world size ",
                                                     world_size_, ")"));
    }
  }
  std::string value;
  std::vector<std::string> all;
  {
    absl::MutexLock lock(&mu_);
    if (auto done = exchanged_.find(key); done != exchanged_.end()) {
      all = done->second;
    } else if (auto mine = published_.find(key); mine != published_.end()) {
      value = mine->second;
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          "rendezvous '", key, "': rank ", rank_,
          " looks up a key it did not publish; through the agent every rank publishes its "
          "value, then all receive all"));
    }
  }
  if (all.empty()) {
    ASSIGN_OR_RETURN(all, client_->Rendezvous(job_id_, std::string(key), rank_, world_size_,
                                              value, timeout));
    absl::MutexLock lock(&mu_);
    exchanged_.emplace(std::string(key), all);
  }
  std::vector<std::string> values;
  values.reserve(ranks.size());
  for (int rank : ranks) values.push_back(all[rank]);
  return values;
}

}  // namespace weft::datapath
