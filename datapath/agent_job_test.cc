#include "datapath/agent_job.h"

#include <memory>
#include <string>
#include <vector>

#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"
#include "tests/agent_socket_fixture.h"

namespace weft::datapath {
namespace {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;
using rdma::QpAttributes;
using ::weft::testing::AgentSocketFixture;

// Every rank's fake verbs has the NICs the agent reports (mlx5_0 and mlx5_1), with
// addresses unique on the shared fabric.
std::vector<std::unique_ptr<FakeVerbs>> RoceVerbs(FakeFabric* fabric, int ranks) {
  std::vector<std::unique_ptr<FakeVerbs>> verbs;
  for (int r = 0; r < ranks; ++r) {
    verbs.push_back(std::make_unique<FakeVerbs>(
        fabric, std::vector<FakeDeviceConfig>{
                    FakeDeviceConfig::Roce("mlx5_0", 0x0a000001u + 2 * r),
                    FakeDeviceConfig::Roce("mlx5_1", 0x0a000002u + 2 * r)}));
  }
  return verbs;
}

JobOptions Options(const AgentSocketFixture& f, const std::string& job, int rank, int size) {
  JobOptions options;
  options.rank = rank;
  options.size = size;
  options.agent_socket = f.socket(rank % 2);
  options.job_id = job;
  options.gpu = std::to_string(rank / 2);  // two ranks per node, GPUs 0 and 1
  options.connect_timeout = absl::Seconds(20);
  return options;
}

TEST(JoinThroughAgentTest, TheAgentsPathAndClassReachTheRcQueuePairs) {
  auto fixture = AgentSocketFixture::Start(
      "job", {AgentSocketFixture::RoceNode(2), AgentSocketFixture::RoceNode(2)});
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  FakeFabric fabric;
  auto verbs = RoceVerbs(&fabric, 4);
  std::vector<std::unique_ptr<Job>> jobs(4);
  std::vector<AgentPathChoice> choices(4);
  RunRanks(4, [&](int rank) {
    JobOptions options = Options(**fixture, "job-rc", rank, 4);
    options.qos_class = "control";
    auto job = JoinThroughAgent(options, verbs[rank].get(), &choices[rank]);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ((*job)->transport_choice().kind, TransportKind::kRc);
    std::vector<float> data(5000, 1.0f + rank);
    ASSERT_TRUE((*job)
                    ->communicator()
                    .AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum)
                    .ok());
    EXPECT_EQ(data.front(), 10.0f);
    EXPECT_EQ(data.back(), 10.0f);
    jobs[rank] = std::move(*job);
  });
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(choices[rank].chosen);
    EXPECT_EQ(choices[rank].path.device(), "mlx5_" + std::to_string(rank / 2)) << "GPU-affine";
    EXPECT_EQ(choices[rank].path.traffic_class(), 66u);
  }
  // Every QP on the fabric carries the control class's traffic class.
  int qps = 0;
  for (uint32_t qpn = 0x100; qpn < 0x200; ++qpn) {
    std::optional<QpAttributes> attr = verbs[0]->GetQpAttributes(qpn);
    if (!attr.has_value()) continue;
    ++qps;
    EXPECT_EQ(attr->av.traffic_class, 66) << "qp " << qpn;
  }
  EXPECT_GE(qps, 3) << "rank 0 connects to its 3 peers";
  jobs.clear();
}

TEST(JoinThroughAgentTest, NoUsablePortMeansTcpAndTheReasonSaysWhy) {
  agent::NodeInventory down = AgentSocketFixture::RoceNode(1);
  down.nics[0].set_state(weft::v1::PORT_STATE_DOWN);
  auto fixture = AgentSocketFixture::Start("tcp", {down, down});
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  FakeFabric fabric;
  auto verbs = RoceVerbs(&fabric, 2);  // devices exist, but the agent says their ports are down
  RunRanks(2, [&](int rank) {
    JobOptions options = Options(**fixture, "job-tcp", rank, 2);
    options.gpu.clear();
    auto job = JoinThroughAgent(options, verbs[rank].get());
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ((*job)->transport_choice().kind, TransportKind::kTcp);
    EXPECT_EQ((*job)->transport_choice().reason,
              "the node agent offers no RDMA path: no ACTIVE RoCE port with a RoCE v2 IPv4 GID "
              "on this node (mlx5_0 port 1: port is DOWN); jobs here must use TCP");
    int64_t value = rank + 1;
    ASSERT_TRUE((*job)->communicator().AllReduce(&value, 1, DataType::kInt64, ReduceOp::kSum).ok());
    EXPECT_EQ(value, 3);
  });
}

TEST(JoinThroughAgentTest, BadInputIsRefusedBeforeAnythingStarts) {
  auto fixture = AgentSocketFixture::Start("bad", {AgentSocketFixture::RoceNode(1)});
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {});
  JobOptions options = Options(**fixture, "job-bad", 0, 1);
  options.gpu = "7";
  absl::StatusOr<std::unique_ptr<Job>> job = JoinThroughAgent(options, &verbs);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(job.status().message(),
            "asking the node agent for this rank's path: no GPU with index 7 on this node; its "
            "GPUs: 0 (0000:10:00.0)");
  options.gpu = "gpu0";
  EXPECT_EQ(JoinThroughAgent(options, &verbs).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.gpu.clear();
  options.qos_class = "bulk";
  EXPECT_EQ(JoinThroughAgent(options, &verbs).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.job_id.clear();
  EXPECT_EQ(JoinThroughAgent(options, &verbs).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::datapath
