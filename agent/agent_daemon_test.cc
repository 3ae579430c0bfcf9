#include "agent/agent_daemon.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/fabric_backend.h"
#include "agent/fake_fabric_service.h"
#include "agent/lldp.h"
#include "agent/sim_backend.h"
#include "common/daemon_config.h"
#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;

// A validated simulated node that serves nothing and whose controller never answers.
weft::v1::AgentConfig SimulatedConfig() {
  weft::v1::AgentConfig config = DefaultAgentConfig();
  config.set_node_name("gpu-t01");
  config.set_controller_address("127.0.0.1:1");
  config.set_metrics_address("off");
  config.set_health_address("");
  config.set_job_socket("off");
  config.set_lldp("auto");
  config.mutable_simulated()->set_nics(2);
  config.mutable_simulated()->set_gpus(2);
  EXPECT_TRUE(ValidateAgentConfig(config).ok()) << ValidateAgentConfig(config);
  return config;
}

class AgentDaemonTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<AgentDaemon>> Build(const weft::v1::AgentConfig& config) {
    return AgentDaemon::Build(config, AgentProcess{&clock_, registry_});
  }

  FakeClock clock_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
};

TEST_F(AgentDaemonTest, SimulatedConfigWithoutFaultsTalksThroughTheGrpcClient) {
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(SimulatedConfig());
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_NE(dynamic_cast<SimBackend*>(&(*daemon)->backend()), nullptr)
      << "lldp auto leaves a simulated backend bare";
  EXPECT_EQ(&(*daemon)->controller_client(), &(*daemon)->grpc_client());
  EXPECT_EQ((*daemon)->metrics_server(), nullptr);
  EXPECT_EQ((*daemon)->health_server(), nullptr);
  // The agent's series are on the process's registry.
  EXPECT_EQ(MetricValue(*registry_, "weft_agent_registered"), 0);
}

// Only `dead` is the connection's; the NIC faults stay in the simulated backend.
TEST_F(AgentDaemonTest, DeadFaultAloneDecoratesTheControllerClient) {
  for (weft::v1::SimFault fault : {weft::v1::SIM_FAULT_DEAD, weft::v1::SIM_FAULT_PFC_STORM,
                                   weft::v1::SIM_FAULT_REJECT_TUNABLES}) {
    weft::v1::AgentConfig config = SimulatedConfig();
    config.mutable_simulated()->add_faults(fault);
    absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(config);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    const bool decorated = &(*daemon)->controller_client() != &(*daemon)->grpc_client();
    EXPECT_EQ(decorated, fault == weft::v1::SIM_FAULT_DEAD) << weft::v1::SimFault_Name(fault);
  }
}

TEST_F(AgentDaemonTest, ExplicitLldpSocketWrapsTheBackend) {
  weft::v1::AgentConfig config = SimulatedConfig();
  config.set_lldp("/nonexistent/lldpd.socket");
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(config);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_NE(dynamic_cast<LldpNicBackend*>(&(*daemon)->backend()), nullptr);
}

TEST_F(AgentDaemonTest, EndpointsOnPortZeroAdvertiseTheBoundAddress) {
  weft::v1::AgentConfig config = SimulatedConfig();
  config.set_metrics_address("127.0.0.1:0");
  config.set_health_address("127.0.0.1:0");
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(config);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_NE((*daemon)->metrics_server(), nullptr);
  ASSERT_NE((*daemon)->health_server(), nullptr);
  EXPECT_EQ((*daemon)->config().metrics_address(), (*daemon)->metrics_server()->address());
  EXPECT_NE((*daemon)->config().metrics_address(), "127.0.0.1:0");
  EXPECT_NE((*daemon)->health_server()->address(), "127.0.0.1:0");
}

TEST_F(AgentDaemonTest, BusyMetricsAddressCannotStart) {
  weft::v1::AgentConfig config = SimulatedConfig();
  config.set_metrics_address("127.0.0.1:0");
  absl::StatusOr<std::unique_ptr<AgentDaemon>> first = Build(config);
  ASSERT_TRUE(first.ok()) << first.status();
  config.set_metrics_address((*first)->metrics_server()->address());
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<AgentDaemon>> second =
      AgentDaemon::Build(config, AgentProcess{&clock, std::make_shared<prometheus::Registry>()});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot start /metrics: "));
}

TEST_F(AgentDaemonTest, UnusableSettingsAreInvalidArgument) {
  weft::v1::AgentConfig tls = SimulatedConfig();
  tls.mutable_tls()->set_cert_file("/nonexistent/node.crt");
  tls.mutable_tls()->set_key_file("/nonexistent/node.key");
  tls.mutable_tls()->set_ca_file("/nonexistent/ca.crt");
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(tls);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kInvalidArgument) << daemon.status();
  EXPECT_THAT(daemon.status().message(), HasSubstr("/nonexistent/"));

  weft::v1::AgentConfig backend = SimulatedConfig();
  backend.set_backend("carrier-pigeon");
  daemon = Build(backend);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kInvalidArgument) << daemon.status();
  EXPECT_THAT(daemon.status().message(), HasSubstr("carrier-pigeon"));
}

// weft-agent's main hands over a registry it keeps no share of.
TEST_F(AgentDaemonTest, TheDaemonKeepsItsRegistry) {
  auto registry = std::make_shared<prometheus::Registry>();
  const std::weak_ptr<prometheus::Registry> watch = registry;
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon =
      AgentDaemon::Build(SimulatedConfig(), AgentProcess{&clock_, std::move(registry)});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_FALSE(watch.expired());
  daemon->reset();
  EXPECT_TRUE(watch.expired());
}

TEST_F(AgentDaemonTest, StartDiscoversTheSimulatedNodeAndStopIsIdempotent) {
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(SimulatedConfig());
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE((*daemon)->Start().ok());
  EXPECT_EQ((*daemon)->agent().inventory().nics.size(), 2u);
  EXPECT_EQ((*daemon)->agent().inventory().gpus.size(), 2u);
  EXPECT_FALSE((*daemon)->agent().registered());
  (*daemon)->Stop();
  (*daemon)->Stop();
}

// The node as the fabric twin has it: two NICs, one GPU, another rack than the config's.
weft::v1::ReadNodeResponse TwinNode(const std::string& node) {
  weft::v1::ReadNodeResponse response;
  response.set_node(node);
  response.set_rack("rack-twin");
  for (const char* device : {"mlx5_0", "mlx5_1"}) {
    weft::v1::FabricNic* nic = response.add_nics();
    nic->mutable_nic()->set_device(device);
    nic->mutable_nic()->set_port(1);
    nic->mutable_nic()->set_state(weft::v1::PORT_STATE_ACTIVE);
    (*nic->mutable_counters()->mutable_port_counters())["port_xmit_data"] = 1;
  }
  response.add_gpus()->set_index(0);
  return response;
}

weft::v1::AgentConfig FabricConfig(const std::string& address) {
  weft::v1::AgentConfig config = SimulatedConfig();
  config.set_backend("fabric");
  config.set_rack("rack-a");
  config.mutable_fabric()->set_address(address);
  EXPECT_TRUE(ValidateAgentConfig(config).ok()) << ValidateAgentConfig(config);
  return config;
}

TEST_F(AgentDaemonTest, FabricConfigDiscoversTheNodeFromTheTwin) {
  FakeFabricServer twin;
  twin.service().set_node(TwinNode("gpu-t01"));
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(FabricConfig(twin.address()));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_NE(dynamic_cast<FabricNicBackend*>(&(*daemon)->backend()), nullptr)
      << "lldp auto leaves a fabric backend bare";
  ASSERT_TRUE((*daemon)->Start().ok());
  const NodeInventory& inventory = (*daemon)->agent().inventory();
  EXPECT_EQ(inventory.nics.size(), 2u);
  EXPECT_EQ(inventory.gpus.size(), 1u);
  ASSERT_EQ(inventory.notes.size(), 1u);
  EXPECT_THAT(inventory.notes[0], HasSubstr("reports rack 'rack-a'"));
  (*daemon)->Stop();
}

TEST_F(AgentDaemonTest, FabricTwinDownFailsStartNamingTheAddress) {
  std::string address;
  {
    FakeFabricServer gone;  // a port that was free a moment ago and is closed now
    address = gone.address();
  }
  absl::StatusOr<std::unique_ptr<AgentDaemon>> daemon = Build(FabricConfig(address));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  absl::Status started = (*daemon)->Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable) << started;
  EXPECT_THAT(started.message(), HasSubstr(address));
  EXPECT_THAT(started.message(), HasSubstr("is weft-fabric running?"));
}

}  // namespace
}  // namespace weft::agent
