#include "agent/job_service.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/job_path.h"
#include "common/grpc_status.h"
#include "common/logging.h"

namespace weft::agent {
namespace {

// sockaddr_un.sun_path, the terminating NUL included.
constexpr size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path);

// Whether a process accepts connections on the Unix socket `path`.
bool SomeoneListens(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const bool connected =
      connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return connected;
}

// Makes `path` free for a new socket: creates its directory, removes a stale socket,
// refuses a live one or anything that is not a socket.
absl::Status PrepareSocketPath(const std::string& path) {
  if (path.size() >= kMaxSocketPath || path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "job socket '", path, "' is not an absolute path shorter than ", kMaxSocketPath,
        " bytes (a Unix socket's limit)"));
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (std::filesystem::create_directories(dir, error)) {
    chmod(dir.c_str(), 0755);
  } else if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot create the job socket's directory ", dir.string(), ": ",
                     error.message()));
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // nothing there
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job socket path ", path, " exists and is not a socket; remove it or set job_socket"));
  }
  if (SomeoneListens(path)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another process serves jobs on ", path,
        " (a second weft-agent on this node?); stop it or set a different job_socket"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(absl::StrCat("cannot remove the stale job socket ", path, ": ",
                                               std::strerror(errno)));
  }
  WEFT_LOG(INFO) << "removed a stale job socket path=" << path;
  return absl::OkStatus();
}

}  // namespace

// One relayed Rendezvous: the job's call waits on the controller's, without a thread.
// Finished from the relayed call's completion; a job that goes away cancels the relay.
// Deleted by gRPC's OnDone, which follows Finish.
class JobServiceImpl::RelayReactor final : public grpc::ServerUnaryReactor {
 public:
  RelayReactor(const JobServiceImpl* service, const weft::v1::RendezvousRequest& request,
               weft::v1::RendezvousResponse* response)
      : service_(service), relayed_(request), response_(response) {
    relayed_.set_node(service_->options_.node_name);
  }

  void Start() {
    context_.set_deadline(absl::ToChronoTime(
        absl::Now() + absl::Milliseconds(relayed_.timeout_ms()) + service_->options_.relay_slack));
    service_->controller_->async()->Rendezvous(
        &context_, &relayed_, response_, [this](grpc::Status status) {
          if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
            status = grpc::Status(
                status.error_code(),
                absl::StrCat("the controller at ", service_->options_.controller_address,
                             " is unavailable to relay the rendezvous: ",
                             status.error_message()));
          }
          Finish(status);
        });
  }

  // The job hung up: stop waiting at the controller too.
  void OnCancel() override { context_.TryCancel(); }
  void OnDone() override { delete this; }

 private:
  const JobServiceImpl* const service_;
  weft::v1::RendezvousRequest relayed_;
  weft::v1::RendezvousResponse* const response_;
  grpc::ClientContext context_;
};

JobServiceImpl::JobServiceImpl(JobServiceOptions options, InventorySource inventory,
                               std::shared_ptr<grpc::ChannelInterface> controller)
    : options_(std::move(options)),
      inventory_(std::move(inventory)),
      controller_(weft::v1::RendezvousService::NewStub(std::move(controller))) {}

grpc::ServerUnaryReactor* JobServiceImpl::ChoosePath(grpc::CallbackServerContext* context,
                                                     const weft::v1::ChoosePathRequest* request,
                                                     weft::v1::ChoosePathResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<weft::v1::ChoosePathResponse> path = ChooseJobPath(inventory_(), *request);
  if (path.ok()) {
    *response = *std::move(path);
    WEFT_LOG(DEBUG) << "job path device=" << response->device()
                    << " gid_index=" << response->gid_index()
                    << " traffic_class=" << response->traffic_class() << " reason=\""
                    << response->reason() << "\"";
  }
  reactor->Finish(ToGrpcStatus(path.status()));
  return reactor;
}

grpc::ServerUnaryReactor* JobServiceImpl::Rendezvous(grpc::CallbackServerContext* /*context*/,
                                                     const weft::v1::RendezvousRequest* request,
                                                     weft::v1::RendezvousResponse* response) {
  auto* reactor = new RelayReactor(this, *request, response);
  reactor->Start();
  return reactor;
}

absl::StatusOr<std::unique_ptr<JobServer>> JobServer::Start(const std::string& path,
                                                            JobServiceImpl* service) {
  if (absl::Status ready = PrepareSocketPath(path); !ready.ok()) return ready;
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve the job socket on ", path));
  }
  // Jobs run as their users, not as the agent's: let every local process connect.
  if (chmod(path.c_str(), 0666) != 0) {
    const int error = errno;
    server->Shutdown();
    unlink(path.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot chmod the job socket ", path, ": ", std::strerror(error)));
  }
  return std::unique_ptr<JobServer>(new JobServer(path, std::move(server)));
}

JobServer::~JobServer() {
  server_->Shutdown(absl::ToChronoTime(absl::Now()));  // cancels relays in flight
  server_->Wait();
  unlink(path_.c_str());
}

}  // namespace weft::agent
