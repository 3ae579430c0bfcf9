#include "fabric/twin_host.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/twin.h"

namespace weft::fabric {
namespace {

using ::testing::HasSubstr;

// Two racks of two nodes, two 100 Gb/s NICs each, one pod.
TwinHost SmallHost() {
  sim::TwinFabricOptions options;
  options.nics_per_node = 2;
  options.nic_bps = 100e9;
  options.uplinks_per_tor = 2;
  absl::StatusOr<sim::TwinTopology> topology =
      sim::BuildTwinTopology(sim::DemoRacks(2, 2, 2), options);
  EXPECT_TRUE(topology.ok()) << topology.status();
  absl::StatusOr<sim::Twin> twin = sim::Twin::Create(*std::move(topology), sim::DcqcnParams());
  EXPECT_TRUE(twin.ok()) << twin.status();
  return TwinHost(*std::move(twin), /*gpus_per_node=*/4);
}

sim::TrainingJobSpec Job(const std::string& name) {
  sim::TrainingJobSpec job;
  job.name = name;
  job.model.parameters = 1e9;
  job.model.tokens_per_iteration = 1e6;
  job.model.compute_s_per_iteration = 0.01;
  return job;
}

TEST(TwinHostTest, ReadNodeDescribesTheNodeLikeAHost) {
  TwinHost host = SmallHost();
  absl::StatusOr<weft::v1::ReadNodeResponse> node = host.ReadNode("gpu-b02");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->rack(), "rack-b");
  EXPECT_EQ(node->pod(), "pod-1");
  ASSERT_EQ(node->nics_size(), 2);
  const weft::v1::Nic& nic = node->nics(1).nic();
  EXPECT_EQ(nic.device(), "mlx5_1");
  EXPECT_EQ(nic.netdev(), "ens2np0");
  EXPECT_EQ(nic.state(), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(nic.speed_mbps(), 100000u);
  ASSERT_EQ(nic.gids_size(), 4);
  EXPECT_EQ(nic.gids(3).type(), weft::v1::GID_TYPE_ROCE_V2);
  EXPECT_THAT(nic.gids(3).gid(), HasSubstr("0000:ffff:0a00"));  // 10.0.x.y, IPv4-mapped
  ASSERT_EQ(node->gpus_size(), 4);
  EXPECT_EQ(node->gpus(3).closest_nic(), "mlx5_1");
  EXPECT_EQ(node->nics(0).tunables().qos().pfc_priorities(0), 3u);
  // The PFC counters of the lossless priority are there from the start, at zero.
  EXPECT_EQ(node->nics(0).counters().ethtool().at("rx_prio3_pause"), 0u);
}

TEST(TwinHostTest, CountersGrowWithAJobsTraffic) {
  TwinHost host = SmallHost();
  ASSERT_TRUE(host.StartJob(Job("j"), {"gpu-a01", "gpu-b01"}).ok());
  ASSERT_TRUE(host.Advance(1.0).ok());
  absl::StatusOr<weft::v1::ReadNodeResponse> node = host.ReadNode("gpu-a01");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_GT(node->nics(0).counters().port_counters().at("port_xmit_data"), 0u);
  absl::StatusOr<weft::v1::ReadNodeResponse> idle = host.ReadNode("gpu-a02");
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->nics(0).counters().port_counters().at("port_xmit_data"), 0u);
  EXPECT_DOUBLE_EQ(node->fabric_time_s(), 1.0);
  const std::vector<TwinHost::JobView> jobs = host.Jobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].racks, (std::vector<std::string>{"rack-a", "rack-b"}));
  EXPECT_GT(jobs[0].status.iterations_done, 0);
}

TEST(TwinHostTest, UnknownNamesAreRefusedNamingThem) {
  TwinHost host = SmallHost();
  EXPECT_EQ(host.ReadNode("gpu-z09").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(host.ReadNode("gpu-z09").status().message(), HasSubstr("gpu-z09"));
  weft::v1::SetNicTunablesRequest tunables;
  tunables.set_node("gpu-a01");
  tunables.set_device("mlx5_7");
  EXPECT_THAT(host.SetNicTunables(tunables).message(), HasSubstr("mlx5_7"));
  EXPECT_EQ(host.ClearFault("f9").code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(host.ClearFault("storm").message(), HasSubstr("fault ids look like f1"));
  EXPECT_FALSE(host.StartJob(Job("j"), {"gpu-a01", "nobody"}).ok());
}

TEST(TwinHostTest, FaultsByNameNeedTheFieldsTheirKindNeeds) {
  TwinHost host = SmallHost();
  weft::v1::FabricFault storm;
  storm.set_kind(weft::v1::FABRIC_FAULT_PFC_STORM);
  storm.set_node("gpu-a02");
  storm.set_value(0.9);
  EXPECT_THAT(host.InjectFault(storm).status().message(), HasSubstr("needs a node and a NIC"));
  storm.set_device("mlx5_0");
  absl::StatusOr<weft::v1::FabricFault> injected = host.InjectFault(storm);
  ASSERT_TRUE(injected.ok()) << injected.status();
  EXPECT_EQ(injected->id(), "f1");
  EXPECT_EQ(injected->node(), "gpu-a02");
  EXPECT_EQ(injected->device(), "mlx5_0");

  weft::v1::FabricFault down;
  down.set_kind(weft::v1::FABRIC_FAULT_LINK_DOWN);
  EXPECT_THAT(host.InjectFault(down).status().message(), HasSubstr("needs a link"));
  down.set_link("no-such--cable");
  EXPECT_FALSE(host.InjectFault(down).ok());
  const weft::v1::ListLinksResponse links = host.ListLinks({});
  ASSERT_FALSE(links.links().empty());
  down.set_link(links.links(0).name());
  absl::StatusOr<weft::v1::FabricFault> cable = host.InjectFault(down);
  ASSERT_TRUE(cable.ok()) << cable.status();
  EXPECT_EQ(cable->link(), links.links(0).name());

  EXPECT_EQ(host.ListFaults().faults_size(), 2);
  ASSERT_TRUE(host.ClearFault("f1").ok());
  EXPECT_EQ(host.ListFaults().faults_size(), 1);
  ASSERT_TRUE(host.ClearFault("all").ok());
  EXPECT_EQ(host.ListFaults().faults_size(), 0);
}

TEST(TwinHostTest, ADeadNodeCannotBeReadAndSaysHowToReviveIt) {
  TwinHost host = SmallHost();
  weft::v1::FabricFault dead;
  dead.set_kind(weft::v1::FABRIC_FAULT_DEAD_NODE);
  dead.set_node("gpu-b01");
  ASSERT_TRUE(host.InjectFault(dead).ok());
  const absl::Status read = host.ReadNode("gpu-b01").status();
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read.message(), HasSubstr("weftctl fabric clear f1"));
  EXPECT_TRUE(host.ReadNode("gpu-b02").ok());
  ASSERT_TRUE(host.ClearFault("f1").ok());
  EXPECT_TRUE(host.ReadNode("gpu-b01").ok());
}

TEST(TwinHostTest, LinksFilterByPrefixAndTraffic) {
  TwinHost host = SmallHost();
  weft::v1::ListLinksRequest request;
  request.set_prefix("gpu-a01/");
  const weft::v1::ListLinksResponse nic_links = host.ListLinks(request);
  // Two NICs, each a cable of two directions, both ends listed by their from side.
  EXPECT_EQ(nic_links.links_size(), 4);
  for (const weft::v1::FabricLink& link : nic_links.links()) {
    EXPECT_DOUBLE_EQ(link.capacity_bps(), 100e9);
  }
  request.set_busy_only(true);
  EXPECT_EQ(host.ListLinks(request).links_size(), 0);
  ASSERT_TRUE(host.StartJob(Job("j"), {"gpu-a01", "gpu-a02"}).ok());
  ASSERT_TRUE(host.Advance(0.02).ok());  // past the 10 ms of compute, into the all-reduce
  EXPECT_GT(host.ListLinks(request).links_size(), 0);
}

}  // namespace
}  // namespace weft::fabric
