#include "datapath/job.h"

#include <net/if.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"

namespace weft::datapath {
namespace {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;

std::function<const char*(const char*)> Env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(JobOptionsTest, ReadsTheEnvironment) {
  auto options = JobOptions::FromEnvironment(Env({{"WEFT_RANK", "3"},
                                                  {"WEFT_WORLD_SIZE", "8"},
                                                  {"WEFT_RENDEZVOUS", "10.0.0.1:29500"},
                                                  {"WEFT_TRANSPORT", "rc"},
                                                  {"WEFT_QOS_CLASS", "storage"},
                                                  {"WEFT_IB_HCA", "mlx5_3"},
                                                  {"WEFT_IB_GID_INDEX", "3"},
                                                  {"WEFT_SOCKET_HOST", "10.0.0.7"},
                                                  {"WEFT_SCOPE", "job42"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->rank, 3);
  EXPECT_EQ(options->size, 8);
  EXPECT_EQ(options->rendezvous_address, "10.0.0.1:29500");
  EXPECT_EQ(options->transport, TransportKind::kRc);
  EXPECT_EQ(options->qos_class, "storage");
  EXPECT_EQ(options->device, "mlx5_3");
  EXPECT_EQ(options->gid_index, 3u);
  EXPECT_EQ(options->socket_host, "10.0.0.7");
  EXPECT_EQ(options->scope, "job42");
  EXPECT_EQ(options->netdev_ifindex, 0u) << "any netdev unless named";
}

TEST(JobOptionsTest, ANamedNetdevBecomesItsIfindex) {
  auto options = JobOptions::FromEnvironment(
      Env({{"WEFT_RANK", "0"}, {"WEFT_WORLD_SIZE", "1"}, {"WEFT_IB_NETDEV", "lo"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->netdev_ifindex, ::if_nametoindex("lo"));
  EXPECT_EQ(JobOptions::FromEnvironment(
                Env({{"WEFT_RANK", "0"}, {"WEFT_WORLD_SIZE", "1"}, {"WEFT_IB_NETDEV", "nosuch0"}}))
                .status()
                .message(),
            "WEFT_IB_NETDEV='nosuch0' is not valid; accepted: the name of a network interface "
            "on this host");
}

TEST(JobOptionsTest, ErrorsNameTheVariableAndWhatIsAccepted) {
  EXPECT_EQ(JobOptions::FromEnvironment(Env({})).status().message(),
            "WEFT_RANK and WEFT_WORLD_SIZE must both be set (this process's rank and the "
            "number of ranks)");
  EXPECT_EQ(JobOptions::FromEnvironment(Env({{"WEFT_RANK", "4"}, {"WEFT_WORLD_SIZE", "4"}}))
                .status()
                .message(),
            "WEFT_RANK='4' is not valid; accepted: an integer from 0 to 3");
  EXPECT_EQ(JobOptions::FromEnvironment(
                Env({{"WEFT_RANK", "0"}, {"WEFT_WORLD_SIZE", "2"}, {"WEFT_RENDEZVOUS", "x"}}))
                .status()
                .message(),
            "WEFT_RENDEZVOUS='x' is not valid; accepted: host:port");
  EXPECT_EQ(JobOptions::FromEnvironment(
                Env({{"WEFT_RANK", "0"}, {"WEFT_WORLD_SIZE", "1"}, {"WEFT_TRANSPORT", "ib"}}))
                .status()
                .message(),
            "WEFT_TRANSPORT='ib' is not valid; accepted: auto, rc, tcp");
  EXPECT_FALSE(
      JobOptions::FromEnvironment(Env({{"WEFT_RANK", "0"}, {"WEFT_WORLD_SIZE", "2"}})).ok());
}

TEST(JobOptionsTest, AnAgentSocketReplacesTheStoreAndNeedsAJobId) {
  absl::StatusOr<JobOptions> options = JobOptions::FromEnvironment(
      Env({{"WEFT_RANK", "1"},
           {"WEFT_WORLD_SIZE", "4"},
           {"WEFT_AGENT_SOCKET", "/run/weft/agent.sock"},
           {"WEFT_JOB_ID", "slurm-881.0"},
           {"WEFT_GPU", "0000:1b:00.0"}}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->agent_socket, "/run/weft/agent.sock");
  EXPECT_EQ(options->job_id, "slurm-881.0");
  EXPECT_EQ(options->gpu, "0000:1b:00.0");
  EXPECT_TRUE(options->rendezvous_address.empty());

  EXPECT_EQ(JobOptions::FromEnvironment(Env({{"WEFT_RANK", "0"},
                                             {"WEFT_WORLD_SIZE", "2"},
                                             {"WEFT_AGENT_SOCKET", "/run/weft/agent.sock"}}))
                .status()
                .message(),
            "WEFT_JOB_ID must name the job (the same for all its ranks, unique per run) when "
            "WEFT_AGENT_SOCKET is set");
  EXPECT_EQ(JobOptions::FromEnvironment(Env({{"WEFT_RANK", "0"},
                                             {"WEFT_WORLD_SIZE", "2"},
                                             {"WEFT_AGENT_SOCKET", "agent.sock"},
                                             {"WEFT_JOB_ID", "j"}}))
                .status()
                .message(),
            "WEFT_AGENT_SOCKET='agent.sock' is not valid; accepted: an absolute path");
}

TEST(JobTest, JoinRefusesAnAgentSocketItCannotUse) {
  JobOptions options;
  options.agent_socket = "/run/weft/agent.sock";
  options.job_id = "j";
  absl::StatusOr<std::unique_ptr<Job>> job = Job::Join(options);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(job.status().message().find("join with JoinThroughAgent"), std::string::npos);
}

TEST(JobTest, RanksMeetThroughAStoreAndAllReduceOverRc) {
  auto server = TcpRendezvousServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  FakeFabric fabric;
  std::vector<std::unique_ptr<FakeVerbs>> verbs;
  for (int r = 0; r < 3; ++r) {
    verbs.push_back(std::make_unique<FakeVerbs>(
        &fabric, std::vector<FakeDeviceConfig>{FakeDeviceConfig::Roce("mlx5_0", 0x0a000001u + r)}));
  }
  std::vector<std::unique_ptr<Job>> jobs(3);
  RunRanks(3, [&](int rank) {
    JobOptions options;
    options.rank = rank;
    options.size = 3;
    options.rendezvous_address = absl::StrCat("127.0.0.1:", (*server)->port());
    options.host_rendezvous = false;
    auto job = Job::Join(options, verbs[rank].get());
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ((*job)->transport_choice().kind, TransportKind::kRc);
    std::vector<int64_t> data(1000, rank);
    ASSERT_TRUE((*job)
                    ->communicator()
                    .AllReduce(data.data(), data.size(), DataType::kInt64, ReduceOp::kSum)
                    .ok());
    EXPECT_EQ(data[999], 3);
    jobs[rank] = std::move(*job);
  });
  jobs.clear();
}

// The netdev named reaches GID selection: a port whose RoCE GIDs all belong to another
// netdev has none to offer.
TEST(JobTest, ANetdevWithoutARoceGidOnThePortFailsTheJoin) {
  auto server = TcpRendezvousServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  FakeFabric fabric;
  std::vector<std::unique_ptr<FakeVerbs>> verbs;
  for (int r = 0; r < 2; ++r) {
    verbs.push_back(std::make_unique<FakeVerbs>(
        &fabric, std::vector<FakeDeviceConfig>{
                     FakeDeviceConfig::Roce("mlx5_0", 0x0a000001u + r, /*ifindex=*/2)}));
  }
  for (uint32_t netdev : {2u, 7u}) {
    RunRanks(2, [&](int rank) {
      JobOptions options;
      options.rank = rank;
      options.size = 2;
      options.transport = TransportKind::kRc;
      options.netdev_ifindex = netdev;
      options.connect_timeout = absl::Seconds(5);
      options.rendezvous_address = absl::StrCat("127.0.0.1:", (*server)->port());
      options.host_rendezvous = false;
      options.scope = absl::StrCat("netdev", netdev);
      auto job = Job::Join(options, verbs[rank].get());
      if (netdev == 2) {
        EXPECT_TRUE(job.ok()) << job.status();
      } else {
        ASSERT_FALSE(job.ok());
        EXPECT_NE(job.status().message().find("netdev"), std::string::npos) << job.status();
      }
    });
  }
}

TEST(JobTest, TcpWithoutDevicesAndASingleRankHostsNothing) {
  FakeFabric fabric;
  FakeVerbs no_devices(&fabric, {});
  JobOptions options;
  auto job = Job::Join(options, &no_devices);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)->transport_choice().kind, TransportKind::kTcp);
  EXPECT_EQ((*job)->transport_choice().reason,
            "no RDMA device found (ibv_get_device_list returned 0 devices)");
  float value = 2.5f;
  ASSERT_TRUE((*job)->communicator().AllReduce(&value, 1, DataType::kFloat32, ReduceOp::kMax).ok());
  EXPECT_EQ(value, 2.5f);
}

TEST(JobTest, RankZeroHostsTheStore) {
  // Rank 0 of a two-rank job hosts on a port picked by the kernel; rank 1 is told the
  // port once it is known.
  FakeFabric fabric;
  FakeVerbs none0(&fabric, {});
  FakeVerbs none1(&fabric, {});
  auto probe = TcpRendezvousServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(probe.ok());
  const int port = (*probe)->port();
  probe->reset();  // free the port for rank 0 to bind again (SO_REUSEADDR)
  std::vector<absl::Status> statuses(2);
  RunRanks(2, [&](int rank) {
    JobOptions options;
    options.rank = rank;
    options.size = 2;
    options.rendezvous_address = absl::StrCat("127.0.0.1:", port);
    options.connect_timeout = absl::Seconds(20);
    auto job = Job::Join(options, rank == 0 ? &none0 : &none1);
    statuses[rank] = job.status();
    if (job.ok()) statuses[rank] = (*job)->communicator().Barrier();
  });
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
}

}  // namespace
}  // namespace weft::datapath
