#include "fabric/fabric_daemon.h"

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/daemon_config.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/fabric.grpc.pb.h"

namespace weft::fabric {
namespace {

using ::testing::HasSubstr;

weft::v1::FabricConfig TestConfig() {
  weft::v1::FabricConfig config = DefaultFabricConfig();
  config.set_listen_address("127.0.0.1:0");
  config.set_racks(2);
  config.set_nodes_per_rack(2);
  config.set_nics_per_node(2);
  return config;
}

TEST(FabricDaemonTest, ServesTheTwinAndAdvancesItWithTheClock) {
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<FabricDaemon>> daemon = FabricDaemon::Create(TestConfig(), &clock);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE((*daemon)->Start().ok());
  auto stub = weft::v1::FabricService::NewStub(
      grpc::CreateChannel((*daemon)->listen_address(), grpc::InsecureChannelCredentials()));

  grpc::ClientContext read_context;
  weft::v1::ReadNodeRequest read;
  read.set_node("gpu-b02");
  weft::v1::ReadNodeResponse node;
  ASSERT_TRUE(stub->ReadNode(&read_context, read, &node).ok());
  EXPECT_EQ(node.rack(), "rack-b");
  EXPECT_EQ(node.nics_size(), 2);
  EXPECT_EQ(node.gpus_size(), 8);

  grpc::ClientContext unknown_context;
  read.set_node("gpu-x01");
  const grpc::Status unknown = stub->ReadNode(&unknown_context, read, &node);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(unknown.error_message(), HasSubstr("gpu-x01"));

  grpc::ClientContext inject_context;
  weft::v1::InjectFaultRequest inject;
  inject.mutable_fault()->set_kind(weft::v1::FABRIC_FAULT_PFC_STORM);
  inject.mutable_fault()->set_node("gpu-a01");
  inject.mutable_fault()->set_device("mlx5_0");
  inject.mutable_fault()->set_value(0.95);
  weft::v1::InjectFaultResponse injected;
  ASSERT_TRUE(stub->InjectFault(&inject_context, inject, &injected).ok());
  EXPECT_EQ(injected.fault().id(), "f1");

  // Three ticks of 100 ms of the clock: 0.3 s of the twin.
  for (int tick = 0; tick < 3; ++tick) ASSERT_TRUE(clock.AdvanceToNextDeadline().has_value());
  ASSERT_TRUE(clock.AwaitWaiters(1));
  EXPECT_NEAR((*daemon)->twin().time_s(), 0.3, 1e-9);

  grpc::ClientContext jobs_context;
  weft::v1::ListFabricJobsResponse jobs;
  ASSERT_TRUE(stub->ListJobs(&jobs_context, {}, &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), 0);  // no controller, no jobs
  (*daemon)->Stop();
}

TEST(FabricDaemonTest, ATopologyFileThatCannotBeReadIsRefusedNamingIt) {
  FakeClock clock;
  weft::v1::FabricConfig config = TestConfig();
  config.set_topology_file("/nonexistent/topology.yaml");
  absl::StatusOr<std::unique_ptr<FabricDaemon>> daemon = FabricDaemon::Create(config, &clock);
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(daemon.status().message(), HasSubstr("/nonexistent/topology.yaml"));
}

TEST(FabricDaemonTest, RacksAndNodesComeFromAStaticTopologyFile) {
  const std::string path = ::testing::TempDir() + "/topology.yaml";
  std::ofstream(path) << R"(node_defaults: {gpu_count: 8}
nodes:
  - {name: h100-0001, rack: r12, pod: hall-1}
  - {name: h100-0002, rack: r12, pod: hall-1}
  - {name: h100-0101, rack: r13, pod: hall-1}
)";
  weft::v1::FabricConfig config = TestConfig();
  config.set_topology_file(path);
  absl::StatusOr<std::vector<sim::RackSpec>> racks = RacksOf(config);
  ASSERT_TRUE(racks.ok()) << racks.status();
  ASSERT_EQ(racks->size(), 2u);
  EXPECT_EQ((*racks)[0].name, "r12");
  EXPECT_EQ((*racks)[0].pod, "hall-1");
  EXPECT_EQ((*racks)[0].nodes, (std::vector<std::string>{"h100-0001", "h100-0002"}));
  EXPECT_EQ((*racks)[1].nodes, (std::vector<std::string>{"h100-0101"}));
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<FabricDaemon>> daemon = FabricDaemon::Create(config, &clock);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  absl::StatusOr<weft::v1::ReadNodeResponse> node = (*daemon)->twin().ReadNode("h100-0101");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->rack(), "r13");
}

TEST(FabricDaemonTest, RacksComeFromTheGeneratedSizes) {
  absl::StatusOr<std::vector<sim::RackSpec>> racks = RacksOf(TestConfig());
  ASSERT_TRUE(racks.ok());
  ASSERT_EQ(racks->size(), 2u);
  EXPECT_EQ((*racks)[1].name, "rack-b");
  EXPECT_EQ((*racks)[1].nodes, (std::vector<std::string>{"gpu-b01", "gpu-b02"}));
}

}  // namespace
}  // namespace weft::fabric
