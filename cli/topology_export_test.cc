// Topology exports: Slurm topology.conf, kubectl labels, and JSON that loads back as a
// static topology. (tests/slurm_test.cc feeds the Slurm output to a real slurmctld.)
#include "cli/topology_export.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placement/topology.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

weft::v1::ClusterSnapshot TestSnapshot() {
  absl::StatusOr<weft::v1::ClusterSnapshot> snapshot = placement::LoadStaticTopology(
      std::string(std::getenv("TEST_SRCDIR")) + "/weft/placement/testdata/topology.yaml");
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  return *snapshot;
}

weft::v1::ClusterSnapshot Snapshot(
    std::initializer_list<std::tuple<const char*, const char*, const char*>> nodes) {
  weft::v1::ClusterSnapshot snapshot;
  for (const auto& [name, rack, pod] : nodes) {
    weft::v1::SnapshotNode* node = snapshot.add_nodes();
    node->set_name(name);
    node->set_rack(rack);
    node->set_pod(pod);
    node->set_gpu_count(8);
  }
  return snapshot;
}

TEST(FormatSlurmTopologyTest, RackPodAndTopSwitches) {
  absl::StatusOr<std::string> conf = FormatSlurmTopology(TestSnapshot());
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_EQ(*conf,
            "# Slurm topology.conf (TopologyPlugin=topology/tree) from weftctl topology "
            "export:\n"
            "# 5 nodes in 3 racks (one leaf switch each) and 2 pods (one switch per spine "
            "group).\n"
            "SwitchName=a Nodes=gpu-a01,gpu-a02\n"
            "SwitchName=b Nodes=gpu-b01,gpu-b02\n"
            "SwitchName=c Nodes=gpu-c01\n"
            "SwitchName=p1 Switches=a,b\n"
            "SwitchName=p2 Switches=c\n"
            "SwitchName=fabric Switches=p1,p2\n");
}

TEST(FormatSlurmTopologyTest, OnePodIsTheRootAndPodlessRacksHangOffTheTop) {
  absl::StatusOr<std::string> conf = FormatSlurmTopology(
      Snapshot({{"n2", "r1", "p"}, {"n1", "r1", "p"}, {"n3", "r2", "p"}}));
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_THAT(*conf, HasSubstr("SwitchName=r1 Nodes=n1,n2\nSwitchName=r2 Nodes=n3\n"
                               "SwitchName=p Switches=r1,r2\n"));
  EXPECT_THAT(*conf, ::testing::Not(HasSubstr("fabric")));

  conf = FormatSlurmTopology(Snapshot({{"n1", "r1", ""}, {"n2", "r2", ""}, {"n3", "r3", "p"}}));
  ASSERT_TRUE(conf.ok()) << conf.status();
  EXPECT_THAT(*conf, HasSubstr("SwitchName=p Switches=r3\n"
                               "SwitchName=fabric Switches=r1,r2,p\n"));
}

TEST(FormatSlurmTopologyTest, RefusesWhatSlurmWouldMisread) {
  absl::Status status = FormatSlurmTopology(Snapshot({{"n1", "x", "x"}})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("rack 'x' and pod 'x' would both be switch 'x'"));

  status = FormatSlurmTopology(Snapshot({{"gpu[1]", "r1", "p"}})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("node 'gpu[1]' holds '['"));

  status = FormatSlurmTopology(Snapshot({{"n1", "rack a", "p"}})).status();
  EXPECT_THAT(status.message(), HasSubstr("rack 'rack a' holds ' '"));

  status = FormatSlurmTopology(Snapshot({{"n1", "r1", "fabric"}, {"n2", "r2", "q"}})).status();
  EXPECT_THAT(status.message(), HasSubstr("pod 'fabric' has the name of the top switch"));

  // A rack in two pods is not a tree.
  status = FormatSlurmTopology(Snapshot({{"n1", "r1", "p"}, {"n2", "r1", "q"}})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);

  status = FormatSlurmTopology(weft::v1::ClusterSnapshot()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("no nodes"));
}

TEST(FormatK8sNodeLabelsTest, OneKubectlLinePerNode) {
  absl::StatusOr<std::string> script = FormatK8sNodeLabels(
      Snapshot({{"n2", "r1", "p1"}, {"n1", "p1/r9", "p1"}, {"n3", "r2", ""}}));
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(*script,
            "#!/bin/sh\n"
            "# Kubernetes node labels for Weft's topology tiers (weftctl topology export).\n"
            "# Kueue topology-aware scheduling levels: topology.weft.io/pod, "
            "topology.weft.io/rack, kubernetes.io/hostname.\n"
            "set -e\n"
            "kubectl label node n1 topology.weft.io/pod=p1 topology.weft.io/rack=r9 "
            "--overwrite\n"
            "kubectl label node n2 topology.weft.io/pod=p1 topology.weft.io/rack=r1 "
            "--overwrite\n"
            "kubectl label node n3 topology.weft.io/rack=r2 --overwrite\n");
}

TEST(FormatK8sNodeLabelsTest, RefusesInvalidLabelValues) {
  absl::Status status = FormatK8sNodeLabels(Snapshot({{"n1", "-r1", "p"}})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("rack '-r1' is not a valid Kubernetes label value"));
  status = FormatK8sNodeLabels(Snapshot({{"n1", "r1", std::string(64, 'p').c_str()}})).status();
  EXPECT_THAT(status.message(), HasSubstr("is not a valid Kubernetes label value"));
}

TEST(FormatTopologyJsonTest, LoadsBackAsTheSameTopology) {
  weft::v1::ClusterSnapshot snapshot = TestSnapshot();
  snapshot.mutable_nodes(0)->set_healthy(true);
  const std::string json = FormatTopologyJson(snapshot);
  EXPECT_THAT(json, HasSubstr("\"name\": \"gpu-c01\""));

  absl::StatusOr<weft::v1::ClusterSnapshot> loaded =
      placement::ParseStaticTopology(json, "export.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status() << "\n" << json;
  ASSERT_EQ(loaded->nodes_size(), snapshot.nodes_size());
  for (int i = 0; i < snapshot.nodes_size(); ++i) {
    EXPECT_EQ(loaded->nodes(i).DebugString(), snapshot.nodes(i).DebugString()) << i;
  }
  // "Absent" health stays absent (a static file need not say).
  EXPECT_FALSE(loaded->nodes(2).has_healthy());
}

TEST(ParseTopologyFormatTest, KnownAndUnknown) {
  EXPECT_EQ(*ParseTopologyFormat("slurm"), TopologyFormat::kSlurm);
  EXPECT_EQ(*ParseTopologyFormat("k8s-labels"), TopologyFormat::kK8sLabels);
  EXPECT_EQ(*ParseTopologyFormat("json"), TopologyFormat::kJson);
  EXPECT_EQ(ParseTopologyFormat("yaml").status().message(),
            "--format 'yaml' is not a topology format; accepted: slurm, k8s-labels, json");
}

}  // namespace
}  // namespace weft
