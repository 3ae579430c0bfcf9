#include "topology/cabling.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace weft::topology {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A node whose NIC i (mlx5_i) reaches switches[i] ("" for no neighbor).
ObservedNode Node(const std::string& name, const std::vector<std::string>& switches) {
  ObservedNode node;
  node.name = name;
  for (size_t i = 0; i < switches.size(); ++i) {
    node.nics.push_back({"mlx5_" + std::to_string(i), switches[i],
                         switches[i].empty() ? "" : "swp" + std::to_string(i + 1)});
  }
  return node;
}

weft::v1::StaticTopology Design() {
  weft::v1::StaticTopology design;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes { name: "gpu-a01" rack: "a" }
    nodes { name: "gpu-a02" rack: "a" }
    nodes { name: "gpu-b01" rack: "b" }
    nodes { name: "gpu-c01" rack: "c" }
    racks { name: "a" rail_switches: [ "leaf-a-r0", "leaf-a-r1" ] }
    racks { name: "b" tor: "tor-b" }
  )pb", &design));
  return design;
}

std::string Describe(const weft::v1::CablingFinding& f) {
  return weft::v1::CablingProblem_Name(f.problem()) + " " + f.node() + " " + f.nic() + "#" +
         std::to_string(f.nic_index()) + " expected=" + f.expected() +
         " observed=" + f.observed() + ": " + f.action();
}

std::vector<std::string> Check(const std::vector<ObservedNode>& observed) {
  absl::StatusOr<weft::v1::CablingReport> report = CheckCabling(Design(), observed);
  EXPECT_TRUE(report.ok()) << report.status();
  std::vector<std::string> out;
  if (report.ok()) {
    for (const auto& f : report->findings()) out.push_back(Describe(f));
  }
  return out;
}

TEST(InferRackTest, MajoritySwitchIsTheTor) {
  std::optional<RackInference> rack = InferRack(Node("n", {"tor-1", "tor-1", "tor-2", ""}).nics);
  ASSERT_TRUE(rack.has_value());
  EXPECT_EQ(rack->rack, "tor-1");
  EXPECT_FALSE(rack->rail_group);
}

TEST(InferRackTest, RailOptimisedNodeIsInTheGroupOfItsLeaves) {
  std::optional<RackInference> rack =
      InferRack(Node("n", {"leaf-r1", "leaf-r0", "leaf-r2", "leaf-r3"}).nics);
  ASSERT_TRUE(rack.has_value());
  EXPECT_EQ(rack->rack, "leaf-r0+leaf-r1+leaf-r2+leaf-r3");
  EXPECT_TRUE(rack->rail_group);
}

TEST(InferRackTest, HalfIsNotAMajority) {
  std::optional<RackInference> rack = InferRack(Node("n", {"s1", "s1", "s2", "s2"}).nics);
  ASSERT_TRUE(rack.has_value());
  EXPECT_EQ(rack->rack, "s1+s2");
}

TEST(InferRackTest, NoNeighborNoRack) {
  EXPECT_FALSE(InferRack(Node("n", {"", ""}).nics).has_value());
  EXPECT_FALSE(InferRack({}).has_value());
}

TEST(InferRackTest, ChassisIdWhenNoName) {
  weft::v1::LldpNeighbor neighbor;
  neighbor.set_chassis_id("0c:42:a1:00:00:01");
  EXPECT_EQ(LldpSwitchName(neighbor), "0c:42:a1:00:00:01");
  neighbor.set_chassis_name("leaf-a01");
  EXPECT_EQ(LldpSwitchName(neighbor), "leaf-a01");
}

TEST(InferRailsTest, MostNodesPerIndexTiesToSmallestName) {
  EXPECT_THAT(InferRails({Node("1", {"r0", "r1", "x"}), Node("2", {"r0", "r9"}),
                          Node("3", {"r0", "r1", ""}), Node("4", {"", "r9"})}),
              ElementsAre("r0", "r1", "x"));
  EXPECT_THAT(InferRails({}), IsEmpty());
}

TEST(CheckCablingTest, CleanCablingHasNoFindings) {
  EXPECT_THAT(Check({Node("gpu-a01", {"leaf-a-r0", "leaf-a-r1"}),
                     Node("gpu-a02", {"leaf-a-r0", "leaf-a-r1", ""}),  // NIC 2: no rail
                     Node("gpu-b01", {"tor-b", "tor-b"}),
                     Node("gpu-c01", {"anything"})}),  // rack c declares no cabling
              IsEmpty());
}

TEST(CheckCablingTest, MiswiredNics) {
  EXPECT_THAT(
      Check({Node("gpu-a01", {"leaf-a-r1", "leaf-a-r0"}), Node("gpu-b01", {"tor-b", "tor-x"})}),
      ElementsAre("CABLING_PROBLEM_MISWIRED gpu-a01 mlx5_0#0 expected=leaf-a-r0 "
                  "observed=leaf-a-r1 port swp1: move the cable of mlx5_0 from leaf-a-r1 "
                  "port swp1 to leaf-a-r0",
                  "CABLING_PROBLEM_MISWIRED gpu-a01 mlx5_1#1 expected=leaf-a-r1 "
                  "observed=leaf-a-r0 port swp2: move the cable of mlx5_1 from leaf-a-r0 "
                  "port swp2 to leaf-a-r1",
                  "CABLING_PROBLEM_MISWIRED gpu-b01 mlx5_1#1 expected=tor-b "
                  "observed=tor-x port swp2: move the cable of mlx5_1 from tor-x port swp2 "
                  "to tor-b"));
}

TEST(CheckCablingTest, NodeInAnotherRack) {
  EXPECT_THAT(Check({Node("gpu-b01", {"leaf-a-r0", "leaf-a-r1"})}),
              ElementsAre("CABLING_PROBLEM_WRONG_RACK gpu-b01 #-1 expected=b observed=a: 2 of "
                          "its 2 cabled NICs reach rack a's switches: move the node to rack b "
                          "or list it under rack a in the design"));
}

TEST(CheckCablingTest, MissingLinks) {
  EXPECT_THAT(Check({Node("gpu-a01", {"leaf-a-r0"}), Node("gpu-b01", {"", "tor-b"})}),
              ElementsAre("CABLING_PROBLEM_MISSING_LINK gpu-a01 #1 expected=leaf-a-r1 "
                          "observed=: the node reports no NIC 1 for the link to leaf-a-r1: "
                          "check that the NIC is installed and its driver loaded",
                          "CABLING_PROBLEM_MISSING_LINK gpu-b01 mlx5_0#0 expected=tor-b "
                          "observed=: no LLDP neighbor on mlx5_0: check its cable to tor-b "
                          "and that lldpd runs on the node"));
}

TEST(CheckCablingTest, NodesNotInDesign) {
  ObservedNode registered = Node("gpu-z01", {"tor-z"});
  registered.rack = "z";
  EXPECT_THAT(Check({Node("gpu-y01", {"leaf-y-r0", "leaf-y-r1"}), registered,
                     Node("gpu-x01", {""})}),
              ElementsAre("CABLING_PROBLEM_NOT_IN_DESIGN gpu-x01 #-1 expected= observed=: "
                          "add the node to the design's nodes",
                          "CABLING_PROBLEM_NOT_IN_DESIGN gpu-y01 #-1 expected= "
                          "observed=leaf-y-r0+leaf-y-r1: add the node to the design's nodes "
                          "(it is in rack leaf-y-r0+leaf-y-r1)",
                          "CABLING_PROBLEM_NOT_IN_DESIGN gpu-z01 #-1 expected= observed=z: "
                          "add the node to the design's nodes (it is in rack z)"));
}

TEST(CheckCablingTest, InconsistentDesignIsRefused) {
  weft::v1::StaticTopology design = Design();
  design.add_racks()->set_name("a");
  EXPECT_EQ(CheckCabling(design, {}).status().message(),
            "design: rack a is listed twice in racks");

  design = Design();
  design.mutable_racks(1)->add_rail_switches("leaf-b-r0");
  EXPECT_EQ(CheckCabling(design, {}).status().message(),
            "design: rack b has both tor and rail_switches; give one");

  design = Design();
  weft::v1::RackDesign* c = design.add_racks();
  c->set_name("c");
  c->set_tor("leaf-a-r1");
  EXPECT_EQ(CheckCabling(design, {}).status().message(),
            "design: switch leaf-a-r1 is declared by racks a and c");

  design = Design();
  *design.add_nodes() = design.nodes(0);
  EXPECT_EQ(CheckCabling(design, {}).status().message(),
            "design: node gpu-a01 is listed twice in nodes");
}

TEST(ObservedFromSnapshotTest, ReadsLldpFields) {
  weft::v1::ClusterSnapshot snapshot;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes {
      name: "n1" rack: "r"
      nics { device: "mlx5_0" lldp_switch: "tor-1" lldp_port: "swp3" }
      nics { device: "mlx5_1" }
    }
  )pb", &snapshot));
  std::vector<ObservedNode> nodes = ObservedFromSnapshot(snapshot);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_EQ(nodes[0].rack, "r");
  ASSERT_EQ(nodes[0].nics.size(), 2u);
  EXPECT_EQ(nodes[0].nics[0].switch_name, "tor-1");
  EXPECT_EQ(nodes[0].nics[0].port, "swp3");
  EXPECT_EQ(nodes[0].nics[1].switch_name, "");
}

}  // namespace
}  // namespace weft::topology
