#include "agent/backend_factory.h"

#include "agent/fake_fabric_service.h"

#include "common/daemon_config.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

TEST(BackendFactoryTest, SimulatedBackendHasTheConfiguredNics) {
  FakeClock clock;
  weft::v1::AgentConfig config = DefaultAgentConfig();
  config.set_node_name("gpu-1");
  config.mutable_simulated()->set_nics(4);
  auto backend = MakeNicBackend(config, &clock);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto inventory = (*backend)->Discover();
  ASSERT_TRUE(inventory.ok());
  EXPECT_EQ(inventory->nics.size(), 4u);
}

TEST(BackendFactoryTest, LinuxBackendReadsTheConfiguredRootWithFilters) {
  const std::string root = weft::testing::TempPath("factory_root");
  ASSERT_TRUE(weft::testing::MaterializeFixture("tests/fixtures/mlx5_8nic_8gpu.tree", root).ok());
  FakeClock clock;
  weft::v1::AgentConfig config = DefaultAgentConfig();
  config.set_node_name("gpu-1");
  config.set_backend("linux");
  config.mutable_linux()->set_root(root);
  config.mutable_linux()->add_exclude_devices("mlx5_7");
  auto backend = MakeNicBackend(config, &clock);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto inventory = (*backend)->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  EXPECT_EQ(inventory->nics.size(), 7u);
  EXPECT_EQ(inventory->gpus.size(), 8u);
  auto readings = (*backend)->ReadCounters();
  ASSERT_TRUE(readings.ok());
  // No such netdevs on this machine: the ethtool ioctl fails per NIC, as a warning.
  EXPECT_TRUE((*readings)[0].error.empty());
  ASSERT_FALSE((*readings)[0].warnings.empty());
  EXPECT_THAT((*readings)[0].warnings[0], ::testing::HasSubstr("ens1f0np0"));
}

TEST(BackendFactoryTest, UnknownBackendIsRefused) {
  FakeClock clock;
  weft::v1::AgentConfig config = DefaultAgentConfig();
  config.set_backend("dpdk");
  EXPECT_THAT(MakeNicBackend(config, &clock).status().message(),
              ::testing::HasSubstr("accepted: simulated, linux, fabric"));
}

TEST(BackendFactoryTest, FabricBackendReadsTheNodeFromTheTwinAtTheAddress) {
  FakeFabricServer twin;
  weft::v1::ReadNodeResponse node;
  node.set_node("gpu-a01");
  node.add_nics()->mutable_nic()->set_device("mlx5_0");
  node.add_nics()->mutable_nic()->set_device("mlx5_1");
  twin.service().set_node(node);
  FakeClock clock;
  weft::v1::AgentConfig config = DefaultAgentConfig();
  config.set_node_name("gpu-a01");
  config.set_backend("fabric");
  config.mutable_fabric()->set_address(twin.address());
  auto backend = MakeNicBackend(config, &clock);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto inventory = (*backend)->Discover();
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->nics.size(), 2u);
  EXPECT_EQ(inventory->nics[1].device(), "mlx5_1");
  EXPECT_EQ((*backend)->Tunables().size(), 2u);
  EXPECT_EQ(twin.service().read_node_calls(), 1);
}

TEST(BackendFactoryTest, FabricBackendWithoutAnAddressIsRefusedNamingTheField) {
  FakeClock clock;
  weft::v1::AgentConfig config = DefaultAgentConfig();
  config.set_node_name("gpu-a01");
  config.set_backend("fabric");
  config.mutable_fabric()->set_address("");
  absl::Status status = MakeNicBackend(config, &clock).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("fabric.address"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("--fabric"));
}

}  // namespace
}  // namespace weft::agent
