#include "placement/nccl_env.h"

#include <map>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace weft::placement {
namespace {

std::map<std::string, std::string> AsMap(const weft::v1::NodeEnv& env) {
  std::map<std::string, std::string> out;
  for (const auto& var : env.env()) out[var.name()] = var.value();
  return out;
}

TopoNode Node() {
  TopoNode node;
  node.name = "gpu-a01";
  return node;
}

NodeHardware WithNics(int count) {
  NodeHardware hw;
  for (int i = 0; i < count; ++i) {
    hw.nics.push_back(TopoNic{"mlx5_" + std::to_string(i), 1,
                              "ens" + std::to_string(i) + "np0", 3u});
  }
  return hw;
}

TEST(QosClassTest, TrainingIsDscp26WithEct0) {
  absl::StatusOr<QosClass> c = FindQosClass("training");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dscp, 26u);
  EXPECT_EQ(c->traffic_class, 106u);  // 26 << 2 | 0b10
  c = FindQosClass("");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->name, "training");
  EXPECT_EQ(FindQosClass("storage")->traffic_class, 98u);
  EXPECT_EQ(FindQosClass("control")->traffic_class, 66u);
  for (const QosClass& q : QosClasses()) EXPECT_EQ(q.traffic_class, q.dscp << 2 | 2);
}

TEST(QosClassTest, UnknownClassNamesTheAcceptedOnes) {
  absl::StatusOr<QosClass> c = FindQosClass("bulk");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "unknown qos_class 'bulk'; accepted: training, storage, control");
}

TEST(NodeEnvTest, ExactHcaMatchGidTrafficClassAndSocket) {
  const TopoNode node = Node();
  const NodeHardware hw = WithNics(12);
  const auto env = AsMap(BuildNodeEnv(node, hw, {1, 10}, 106));
  EXPECT_EQ(env.at("NCCL_IB_HCA"), "=mlx5_1:1,mlx5_10:1");
  EXPECT_EQ(env.at("NCCL_IB_GID_INDEX"), "3");
  EXPECT_EQ(env.at("NCCL_IB_TC"), "106");
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "=ens1np0");
  EXPECT_EQ(BuildNodeEnv(node, hw, {1, 10}, 106).node(), "gpu-a01");
}

TEST(NodeEnvTest, DisagreeingGidsAreLeftToNccl) {
  TopoNode node = Node();
  NodeHardware hw = WithNics(2);
  hw.nics[1].roce_v2_gid_index = 5;
  hw.nics[0].port = 2;
  node.socket_ifname = "bond0";
  const auto env = AsMap(BuildNodeEnv(node, hw, {0, 1}, 98));
  EXPECT_EQ(env.count("NCCL_IB_GID_INDEX"), 0u);
  EXPECT_EQ(env.at("NCCL_IB_HCA"), "=mlx5_0:2,mlx5_1:1");
  EXPECT_EQ(env.at("NCCL_SOCKET_IFNAME"), "bond0");
  EXPECT_EQ(env.at("NCCL_IB_TC"), "98");
}

TEST(NodeEnvTest, WithoutNicsOnlyTheTrafficClass) {
  const weft::v1::NodeEnv env = BuildNodeEnv(Node(), WithNics(0), {}, 106);
  ASSERT_EQ(env.env_size(), 1);
  EXPECT_EQ(env.env(0).name(), "NCCL_IB_TC");
}

}  // namespace
}  // namespace weft::placement
