#include "agent/agent_flags.h"

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

using ::testing::ElementsAre;

TEST(ParseSimFaultTest, AcceptsShortAndFullNames) {
  EXPECT_EQ(ParseSimFault("pfc_storm").value(), weft::v1::SIM_FAULT_PFC_STORM);
  EXPECT_EQ(ParseSimFault("LINK_DOWN").value(), weft::v1::SIM_FAULT_LINK_DOWN);
  EXPECT_EQ(ParseSimFault(" retransmits ").value(), weft::v1::SIM_FAULT_RETRANSMITS);
  EXPECT_EQ(ParseSimFault("SIM_FAULT_DEAD").value(), weft::v1::SIM_FAULT_DEAD);
}

TEST(ParseSimFaultTest, RejectsUnknownNamesSayingWhatIsAccepted) {
  const absl::Status status = ParseSimFault("meltdown").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "'meltdown'")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "pfc_storm, link_down")) << status;
  EXPECT_FALSE(ParseSimFault("none").ok());
  EXPECT_FALSE(ParseSimFault("").ok());
}

TEST(ApplyAgentFlagsTest, FabricFlagsSelectTheTwinAndKeepRackAndPod) {
  weft::v1::AgentConfig config;
  config.set_backend("simulated");
  config.set_rack("rack-a");
  config.set_pod("pod-1");
  config.mutable_fabric()->set_address("10.0.0.9:7450");
  AgentFlagOverrides flags;
  flags.backend = "fabric";
  flags.fabric = "127.0.0.1:7450";
  ASSERT_TRUE(ApplyAgentFlags(flags, &config).ok());
  EXPECT_EQ(config.backend(), "fabric");
  EXPECT_EQ(config.fabric().address(), "127.0.0.1:7450");
  EXPECT_EQ(config.rack(), "rack-a");
  EXPECT_EQ(config.pod(), "pod-1");

  AgentFlagOverrides no_fabric_flag;
  no_fabric_flag.backend = "fabric";
  config.mutable_fabric()->set_address("10.0.0.9:7450");
  ASSERT_TRUE(ApplyAgentFlags(no_fabric_flag, &config).ok());
  EXPECT_EQ(config.fabric().address(), "10.0.0.9:7450") << "the file's address stays";
}

TEST(ApplyAgentFlagsTest, ProbePortAndNicAddressesLandWhereTheBackendReadsThem) {
  weft::v1::AgentConfig config;
  config.set_backend("fabric");
  config.mutable_probe()->set_udp_port(7412);
  config.mutable_fabric()->add_nic_ipv4("127.0.9.9");
  AgentFlagOverrides flags;
  flags.probe_port = 7703;
  flags.nic_ipv4 = "127.0.1.1, 127.0.1.2";
  ASSERT_TRUE(ApplyAgentFlags(flags, &config).ok());
  EXPECT_EQ(config.probe().udp_port(), 7703u);
  EXPECT_THAT(config.fabric().nic_ipv4(), ElementsAre("127.0.1.1", "127.0.1.2"));
  EXPECT_TRUE(config.simulated().nic_ipv4().empty());

  flags.backend = "simulated";
  ASSERT_TRUE(ApplyAgentFlags(flags, &config).ok());
  EXPECT_THAT(config.simulated().nic_ipv4(), ElementsAre("127.0.1.1", "127.0.1.2"));

  flags.backend = "linux";
  EXPECT_EQ(ApplyAgentFlags(flags, &config).message(),
            "flag --nic_ipv4: backend 'linux' reads its NICs' addresses from the NICs; "
            "accepted only with --backend simulated or fabric");
}

TEST(ApplyAgentFlagsTest, SetFlagsOverrideTheFileAndUnsetOnesLeaveIt) {
  weft::v1::AgentConfig config;
  config.set_node_name("from-file");
  config.set_rack("rack-file");
  config.set_metrics_address("127.0.0.1:7411");
  config.set_health_address("127.0.0.1:7410");
  config.set_interval_ms(1000);
  config.mutable_simulated()->set_nics(8);
  config.mutable_simulated()->add_faults(weft::v1::SIM_FAULT_DEAD);

  AgentFlagOverrides flags;
  flags.node = "gpu-17";
  flags.controller = "10.0.0.1:7400";
  flags.health = "off";
  flags.interval_ms = 250;
  flags.nics = 2;
  flags.gpus = 4;
  flags.traffic_level = 0.9;
  flags.faults = "pfc_storm, retransmits";
  flags.fault_delay_ms = 8000;
  flags.tunables_dry_run = true;
  ASSERT_TRUE(ApplyAgentFlags(flags, &config).ok());

  EXPECT_EQ(config.node_name(), "gpu-17");
  EXPECT_EQ(config.rack(), "rack-file");
  EXPECT_EQ(config.controller_address(), "10.0.0.1:7400");
  EXPECT_EQ(config.metrics_address(), "127.0.0.1:7411");
  EXPECT_EQ(config.health_address(), "");
  EXPECT_EQ(config.interval_ms(), 250u);
  EXPECT_EQ(config.simulated().nics(), 2u);
  EXPECT_EQ(config.simulated().gpus(), 4u);
  EXPECT_DOUBLE_EQ(config.simulated().traffic_level(), 0.9);
  ASSERT_EQ(config.simulated().faults_size(), 2);
  EXPECT_EQ(config.simulated().faults(0), weft::v1::SIM_FAULT_PFC_STORM);
  EXPECT_EQ(config.simulated().faults(1), weft::v1::SIM_FAULT_RETRANSMITS);
  EXPECT_EQ(config.simulated().fault_delay_ms(), 8000u);
  EXPECT_TRUE(config.tunables_dry_run());
}

TEST(ApplyAgentFlagsTest, RejectTunablesIsASimulatedFault) {
  weft::v1::AgentConfig config;
  AgentFlagOverrides flags;
  flags.faults = "reject_tunables";
  ASSERT_TRUE(ApplyAgentFlags(flags, &config).ok());
  ASSERT_EQ(config.simulated().faults_size(), 1);
  EXPECT_EQ(config.simulated().faults(0), weft::v1::SIM_FAULT_REJECT_TUNABLES);
}

TEST(ApplyAgentFlagsTest, FaultNoneClearsTheFilesFaults) {
  weft::v1::AgentConfig config;
  config.mutable_simulated()->add_faults(weft::v1::SIM_FAULT_DEAD);
  AgentFlagOverrides flags;
  flags.faults = "none";
  ASSERT_TRUE(ApplyAgentFlags(flags, &config).ok());
  EXPECT_EQ(config.simulated().faults_size(), 0);
}

TEST(ApplyAgentFlagsTest, UnknownFaultIsAnError) {
  weft::v1::AgentConfig config;
  AgentFlagOverrides flags;
  flags.faults = "dead,bogus";
  EXPECT_EQ(ApplyAgentFlags(flags, &config).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MergeRepeatedFlagTest, JoinsEveryFormIntoOne) {
  EXPECT_THAT(
      MergeRepeatedFlag({"weft-agent", "--fault=dead", "--node", "n1", "--fault", "pfc_storm",
                         "-fault=link_down", "-fault", "retransmits"},
                        "fault"),
      ElementsAre("weft-agent", "--node", "n1", "--fault=dead,pfc_storm,link_down,retransmits"));
}

TEST(MergeRepeatedFlagTest, LeavesOtherFlagsAndArgumentsAfterTerminatorAlone) {
  EXPECT_THAT(
      MergeRepeatedFlag({"weft-agent", "--faulty=1", "--fault=dead", "--", "--fault=x"}, "fault"),
      ElementsAre("weft-agent", "--faulty=1", "--fault=dead", "--", "--fault=x"));
  EXPECT_THAT(MergeRepeatedFlag({"weft-agent", "--node=n"}, "fault"),
              ElementsAre("weft-agent", "--node=n"));
}

}  // namespace
}  // namespace weft::agent
