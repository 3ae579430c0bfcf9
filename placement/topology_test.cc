#include "placement/topology.h"

#include <cstdlib>
#include <functional>
#include <tuple>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::placement {
namespace {

using ::testing::HasSubstr;
using weft::v1::ClusterSnapshot;

ClusterSnapshot TwoRacks() {
  ClusterSnapshot s;
  for (const auto& [name, rack, pod] : {std::tuple{"n1", "r1", "p1"}, std::tuple{"n2", "r1", "p1"},
                                        std::tuple{"n3", "r2", "p2"}}) {
    auto* node = s.add_nodes();
    node->set_name(name);
    node->set_rack(rack);
    node->set_pod(pod);
    node->set_gpu_count(4);
    node->set_congestion(std::string(name) == "n2" ? 0.5 : 0.0);
    for (int i = 0; i < 2; ++i) node->add_nics()->set_device("mlx5_" + std::to_string(i));
  }
  return s;
}

TEST(TopologyTest, IndexesRacksAndPodsInOrderOfAppearance) {
  absl::StatusOr<Topology> topo = Topology::Build(TwoRacks());
  ASSERT_TRUE(topo.ok()) << topo.status();
  ASSERT_EQ(topo->racks().size(), 2u);
  ASSERT_EQ(topo->pods().size(), 2u);
  EXPECT_EQ(topo->rack(0).name, "r1");
  EXPECT_EQ(topo->rack(0).nodes, (std::vector<NodeId>{0, 1}));
  EXPECT_DOUBLE_EQ(topo->rack(0).congestion, 0.25);  // mean of 0 and 0.5
  EXPECT_EQ(topo->pod(1).name, "p2");
  EXPECT_EQ(topo->pod(1).racks, (std::vector<RackId>{1}));
  EXPECT_EQ(topo->node(2).rack, 1);
  EXPECT_EQ(topo->FindNode("n3"), 2);
  EXPECT_EQ(topo->FindNode("n9"), std::nullopt);
  EXPECT_EQ(topo->UniformGpuCount(), 4);
  EXPECT_TRUE(topo->node(0).healthy);  // `healthy` absent means healthy
}

TEST(TopologyTest, GpusWithoutClosestNicUseTheirRail) {
  absl::StatusOr<Topology> topo = Topology::Build(TwoRacks());
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->node(0).gpu_count, 4);
  EXPECT_EQ(topo->node(0).nic_count, 2);
  const NodeHardware n = *topo->Hardware(0);
  ASSERT_EQ(n.gpus.size(), 4u);
  EXPECT_EQ(n.gpus[0].nic, 0);
  EXPECT_EQ(n.gpus[1].nic, 1);
  EXPECT_EQ(n.gpus[2].nic, 0);  // 2 mod 2 NICs
  EXPECT_EQ(n.gpus[3].nic, 1);
  EXPECT_EQ(n.nics[0].port, 1u);  // port 0 means 1
}

TEST(TopologyTest, MixedGpuCountsHaveNoUniformCount) {
  ClusterSnapshot s = TwoRacks();
  s.mutable_nodes(2)->set_gpu_count(8);
  absl::StatusOr<Topology> topo = Topology::Build(s);
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->UniformGpuCount(), std::nullopt);
}

TEST(TopologyTest, RefusesInconsistentSnapshots) {
  struct Case {
    std::string what;
    std::function<void(ClusterSnapshot*)> edit;
    std::string message;
  };
  const Case cases[] = {
      {"duplicate name", [](ClusterSnapshot* s) { s->mutable_nodes(2)->set_name("n1"); },
       "nodes[2] 'n1': the name repeats nodes[0]"},
      {"no rack", [](ClusterSnapshot* s) { s->mutable_nodes(1)->clear_rack(); },
       "nodes[1] 'n2': the node has no rack; placement needs every node's rack"},
      {"rack in two pods", [](ClusterSnapshot* s) { s->mutable_nodes(1)->set_pod("p9"); },
       "nodes[1] 'n2': rack 'r1' is in pod 'p1' but this node says pod 'p9'; a rack belongs "
       "to one pod"},
      {"unknown closest nic",
       [](ClusterSnapshot* s) {
         auto* gpu = s->mutable_nodes(0)->add_gpus();
         gpu->set_index(0);
         gpu->set_closest_nic("mlx5_7");
       },
       "nodes[0] 'n1': GPU 0 names closest_nic 'mlx5_7', which is not one of its NICs"},
      {"duplicate nic", [](ClusterSnapshot* s) { s->mutable_nodes(0)->add_nics()->set_device("mlx5_0"); },
       "nodes[0] 'n1': NIC 'mlx5_0' is listed twice"},
      {"congestion range", [](ClusterSnapshot* s) { s->mutable_nodes(0)->set_congestion(1.5); },
       "nodes[0] 'n1': congestion 1.5 is out of range; accepted: a number from 0 to 1"},
  };
  for (const Case& c : cases) {
    ClusterSnapshot s = TwoRacks();
    c.edit(&s);
    absl::StatusOr<Topology> topo = Topology::Build(s);
    ASSERT_FALSE(topo.ok()) << c.what;
    EXPECT_EQ(topo.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(topo.status().message(), c.message) << c.what;
  }
}

TEST(TopologyTest, ViewReadsHardwareOnDemand) {
  ClusterSnapshot s = TwoRacks();
  auto* gpu = s.mutable_nodes(2)->add_gpus();
  gpu->set_index(0);
  gpu->set_closest_nic("mlx5_1");
  absl::StatusOr<Topology> view = Topology::BuildView(s);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->node(2).gpu_count, 1);  // the listed GPUs win over gpu_count
  absl::StatusOr<NodeHardware> hw = view->Hardware(2);
  ASSERT_TRUE(hw.ok()) << hw.status();
  ASSERT_EQ(hw->gpus.size(), 1u);
  EXPECT_EQ(hw->nics[hw->gpus[0].nic].device, "mlx5_1");

  // A bad GPU-to-NIC mapping: Build refuses the snapshot, a view only that node.
  gpu->set_closest_nic("mlx5_9");
  EXPECT_FALSE(Topology::Build(s).ok());
  view = Topology::BuildView(s);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_TRUE(view->Hardware(0).ok());
  hw = view->Hardware(2);
  ASSERT_FALSE(hw.ok());
  EXPECT_EQ(hw.status().message(),
            "nodes[2] 'n3': GPU 0 names closest_nic 'mlx5_9', which is not one of its NICs");
}

std::string TestdataPath() {
  return std::string(std::getenv("TEST_SRCDIR")) + "/weft/placement/testdata/topology.yaml";
}

TEST(StaticTopologyTest, LoadsFileAndExpandsDefaults) {
  absl::StatusOr<ClusterSnapshot> snapshot = LoadStaticTopology(TestdataPath());
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_EQ(snapshot->nodes_size(), 5);
  const auto& a01 = snapshot->nodes(0);
  EXPECT_EQ(a01.gpu_count(), 8u);
  EXPECT_EQ(a01.nics_size(), 4);
  EXPECT_EQ(a01.nics(2).netdev(), "ens3np0");
  EXPECT_EQ(a01.nics(2).roce_v2_gid_index(), 3u);
  EXPECT_EQ(a01.socket_ifname(), "eth0");
  EXPECT_FALSE(a01.has_healthy());
  EXPECT_TRUE(snapshot->nodes(1).drained());
  EXPECT_FALSE(snapshot->nodes(3).healthy());

  absl::StatusOr<Topology> topo = Topology::Build(*snapshot);
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->racks().size(), 3u);
  EXPECT_EQ(topo->pods().size(), 2u);
  EXPECT_EQ(topo->UniformGpuCount(), std::nullopt);  // gpu-c01 has 2
  const NodeHardware c01 = *topo->Hardware(*topo->FindNode("gpu-c01"));
  ASSERT_EQ(c01.gpus.size(), 2u);
  EXPECT_EQ(c01.nics[c01.gpus[0].nic].device, "mlx5_1");
  EXPECT_EQ(c01.nics[c01.gpus[1].nic].device, "mlx5_0");
  EXPECT_EQ(c01.nics[1].port, 2u);
  EXPECT_FALSE(c01.nics[0].roce_v2_gid_index.has_value());
  EXPECT_FALSE(topo->node(*topo->FindNode("gpu-b02")).healthy);
}

TEST(StaticTopologyTest, YamlErrorsNameLineAndColumn) {
  absl::StatusOr<ClusterSnapshot> snapshot = ParseStaticTopology(
      "nodes:\n"
      "  - {name: n1, rack: r1}\n"
      "  - {name: n2, rack: r1, congestion: 2}\n",
      "topo.yaml");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(snapshot.status().message(), HasSubstr("topo.yaml:3:"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("congestion"));

  snapshot = ParseStaticTopology("nodes:\n  - {name: n1, rack: r1, colour: red}\n", "t.yaml");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_THAT(snapshot.status().message(), HasSubstr("t.yaml:2:"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("colour"));
}

TEST(StaticTopologyTest, ModelErrorsNameTheSource) {
  absl::StatusOr<ClusterSnapshot> snapshot = ParseStaticTopology(
      "nodes:\n"
      "  - {name: n1, rack: r1}\n"
      "  - {name: n1, rack: r2}\n",
      "topo.yaml");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().message(), "topo.yaml: nodes[1] 'n1': the name repeats nodes[0]");
}

TEST(StaticTopologyTest, MissingFileIsNotFound) {
  absl::StatusOr<ClusterSnapshot> snapshot = LoadStaticTopology("/nonexistent/topology.yaml");
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::placement
