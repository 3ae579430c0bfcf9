#include "agent/job_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/daemon_config.h"
#include "controller/api/rendezvous_service.h"
#include "tests/agent_socket_fixture.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::agent {
namespace {

// Unix socket paths must stay under 108 bytes, so not under TEST_TMPDIR.
std::string SocketPath(absl::string_view name) {
  return absl::StrCat("/tmp/weft-jobsvc-", getpid(), "-", name, ".sock");
}

// A real RendezvousService on 127.0.0.1:0 (what weft-controller serves), and the job
// socket in front of it, called through real gRPC over the Unix socket.
class JobServiceTest : public ::testing::Test {
 protected:
  JobServiceTest() {
    rendezvous_.Start();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&rendezvous_);
    controller_ = builder.BuildAndStart();
  }
  ~JobServiceTest() override {
    jobs_.reset();
    rendezvous_.Stop();
    controller_->Shutdown();
  }

  // The agent side on `path`, relaying to `controller_address`.
  void StartAgent(const std::string& path, std::string controller_address = "") {
    if (controller_address.empty()) controller_address = absl::StrCat("127.0.0.1:", port_);
    service_ = std::make_unique<JobServiceImpl>(
        JobServiceOptions{"node-a", controller_address, absl::Seconds(5)},
        [this] { return inventory_; },
        grpc::CreateChannel(controller_address, grpc::InsecureChannelCredentials()));
    absl::StatusOr<std::unique_ptr<JobServer>> started = JobServer::Start(path, service_.get());
    ASSERT_TRUE(started.ok()) << started.status();
    jobs_ = *std::move(started);
    stub_ = weft::v1::JobService::NewStub(
        grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
  }

  grpc::Status Rendezvous(uint32_t rank, uint32_t world_size, uint32_t timeout_ms,
                          weft::v1::RendezvousResponse* response) {
    weft::v1::RendezvousRequest request;
    request.set_job_id("job-9");
    request.set_key("weft/tcp");
    request.set_rank(rank);
    request.set_world_size(world_size);
    request.set_endpoint(absl::StrCat("rank", rank, "@node-a"));
    request.set_timeout_ms(timeout_ms);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    return stub_->Rendezvous(&context, request, response);
  }

  RealClock clock_;
  prometheus::Registry registry_;
  controller::RendezvousServiceImpl rendezvous_{&clock_, registry_};
  std::unique_ptr<grpc::Server> controller_;
  int port_ = 0;
  NodeInventory inventory_ = weft::testing::AgentSocketFixture::RoceNode(2);
  std::unique_ptr<JobServiceImpl> service_;
  std::unique_ptr<JobServer> jobs_;
  std::unique_ptr<weft::v1::JobService::Stub> stub_;
};

TEST_F(JobServiceTest, ChoosePathOverTheSocketFollowsTheCurrentInventory) {
  const std::string path = SocketPath("choose");
  StartAgent(path);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u) << "every local job may connect";

  weft::v1::ChoosePathRequest request;
  request.set_gpu_index(1);
  request.set_qos_class("control");
  weft::v1::ChoosePathResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ChoosePath(&context, request, &response).ok());
  }
  EXPECT_EQ(response.device(), "mlx5_1");
  EXPECT_EQ(response.netdev(), "ens2np0");
  EXPECT_EQ(response.gid_index(), 3u);
  EXPECT_EQ(response.traffic_class(), 66u);
  EXPECT_EQ(response.reason(), "closest NIC of GPU 1 (0000:11:00.0)");

  // The port goes down: the next answer says so (the source is read per call).
  inventory_.nics[1].set_state(weft::v1::PORT_STATE_DOWN);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ChoosePath(&context, request, &response).ok());
  }
  EXPECT_EQ(response.device(), "mlx5_0");
  EXPECT_NE(response.reason().find("mlx5_1 is not usable (port 1: port is DOWN)"),
            std::string::npos)
      << response.reason();

  request.set_gpu_index(5);
  grpc::ClientContext context;
  const grpc::Status unknown = stub_->ChoosePath(&context, request, &response);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(unknown.error_message(),
            "no GPU with index 5 on this node; its GPUs: 0 (0000:10:00.0), 1 (0000:11:00.0)");
}

TEST_F(JobServiceTest, RendezvousIsRelayedToTheControllerWithTheNodeName) {
  StartAgent(SocketPath("relay"));
  std::vector<weft::v1::RendezvousResponse> responses(3);
  std::vector<grpc::Status> statuses(3);
  std::vector<std::thread> ranks;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    ranks.emplace_back(
        [&, rank] { statuses[rank] = Rendezvous(rank, 3, 10000, &responses[rank]); });
  }
  for (std::thread& t : ranks) t.join();
  for (uint32_t rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].error_message();
    ASSERT_EQ(responses[rank].endpoints_size(), 3);
    EXPECT_EQ(responses[rank].endpoints(2), "rank2@node-a");
  }
}

TEST_F(JobServiceTest, TheControllersTimeoutComesBackNamingTheMissingRanks) {
  StartAgent(SocketPath("timeout"));
  weft::v1::RendezvousResponse response;
  const grpc::Status status = Rendezvous(0, 3, 200, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status.error_message().find(
                "rendezvous job 'job-9' key 'weft/tcp': ranks 1, 2 never arrived"),
            std::string::npos)
      << status.error_message();
}

TEST_F(JobServiceTest, AnUnreachableControllerIsUnavailableNamingItsAddress) {
  // A port nothing listens on: bind one, then close it.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const std::string dead = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  close(fd);
  StartAgent(SocketPath("dead"), dead);
  weft::v1::RendezvousResponse response;
  const grpc::Status status = Rendezvous(0, 2, 1000, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("the controller at " + dead + " is unavailable"),
            std::string::npos)
      << status.error_message();
}

TEST_F(JobServiceTest, ALiveSocketIsNotTakenOverAStaleOneIsReplacedAndStopRemovesIt) {
  const std::string path = SocketPath("owner");
  StartAgent(path);
  absl::StatusOr<std::unique_ptr<JobServer>> second = JobServer::Start(path, service_.get());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("another process serves jobs on " + path),
            std::string::npos);
  jobs_.reset();
  struct stat st {};
  EXPECT_NE(stat(path.c_str(), &st), 0) << "the socket is removed on stop";

  // A socket left behind by a killed agent: bound, never listened on, fd closed.
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);
  absl::StatusOr<std::unique_ptr<JobServer>> replaced = JobServer::Start(path, service_.get());
  EXPECT_TRUE(replaced.ok()) << replaced.status();
}

TEST(JobServerTest, BadPathsAreRefusedClearly) {
  absl::StatusOr<std::unique_ptr<JobServer>> long_path =
      JobServer::Start("/tmp/" + std::string(110, 'x'), nullptr);
  EXPECT_EQ(long_path.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(long_path.status().message().find("shorter than 108 bytes"), std::string::npos);

  const std::string file = SocketPath("plainfile");
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  absl::StatusOr<std::unique_ptr<JobServer>> not_socket = JobServer::Start(file, nullptr);
  EXPECT_EQ(not_socket.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(not_socket.status().message().find("is not a socket"), std::string::npos);
  unlink(file.c_str());
}

TEST(JobSocketConfigTest, DefaultIsRunWeftAndBadValuesAreRefused) {
  weft::v1::AgentConfig config = DefaultAgentConfig();
  EXPECT_EQ(config.job_socket(), "/run/weft/agent.sock");
  config.set_node_name("n");
  EXPECT_TRUE(ValidateAgentConfig(config).ok()) << ValidateAgentConfig(config);
  config.set_job_socket("off");
  EXPECT_TRUE(ValidateAgentConfig(config).ok());
  config.set_job_socket("relative/agent.sock");
  EXPECT_NE(ValidateAgentConfig(config).message().find("job_socket"), std::string::npos);
  config.set_job_socket("/" + std::string(107, 'x'));
  EXPECT_NE(ValidateAgentConfig(config).message().find("shorter than 108 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace weft::agent
