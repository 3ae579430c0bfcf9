#include "agent/job_path.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace weft::agent {
namespace {

void AddGid(weft::v1::Nic& nic, uint32_t index, const std::string& gid, weft::v1::GidType type,
            const std::string& netdev) {
  weft::v1::GidEntry* e = nic.add_gids();
  e->set_index(index);
  e->set_gid(gid);
  e->set_type(type);
  e->set_netdev(netdev);
}

// NIC i: mlx5_i port 1 on ens<i+1>np0, ACTIVE, the usual four GIDs (RoCE v2 IPv4 at 3).
weft::v1::Nic Nic(int i) {
  weft::v1::Nic nic;
  nic.set_device("mlx5_" + std::to_string(i));
  nic.set_port(1);
  nic.set_netdev("ens" + std::to_string(i + 1) + "np0");
  nic.set_link_layer("Ethernet");
  nic.set_state(weft::v1::PORT_STATE_ACTIVE);
  const std::string link_local = "fe80:0000:0000:0000:bace:f6ff:fe00:000" + std::to_string(i);
  const std::string ipv4 = "0000:0000:0000:0000:0000:ffff:0a0" + std::to_string(i) + ":0007";
  AddGid(nic, 0, link_local, weft::v1::GID_TYPE_IB_ROCE_V1, nic.netdev());
  AddGid(nic, 1, link_local, weft::v1::GID_TYPE_ROCE_V2, nic.netdev());
  AddGid(nic, 2, ipv4, weft::v1::GID_TYPE_IB_ROCE_V1, nic.netdev());
  AddGid(nic, 3, ipv4, weft::v1::GID_TYPE_ROCE_V2, nic.netdev());
  return nic;
}

NodeInventory FourNicsFourGpus() {
  NodeInventory inventory;
  for (int i = 0; i < 4; ++i) inventory.nics.push_back(Nic(i));
  for (int i = 0; i < 4; ++i) {
    weft::v1::Gpu gpu;
    gpu.set_index(i);
    gpu.set_pci_address("0000:" + std::to_string(10 + i) + ":00.0");
    gpu.set_closest_nic("mlx5_" + std::to_string(3 - i));  // reversed, so order cannot pass
    inventory.gpus.push_back(gpu);
  }
  return inventory;
}

weft::v1::ChoosePathRequest ForGpu(uint32_t index, const std::string& qos = "") {
  weft::v1::ChoosePathRequest request;
  request.set_gpu_index(index);
  request.set_qos_class(qos);
  return request;
}

TEST(ChooseJobPathTest, TheGpusClosestNicWithItsRoceV2Ipv4GidAndTrainingClass) {
  absl::StatusOr<weft::v1::ChoosePathResponse> path =
      ChooseJobPath(FourNicsFourGpus(), ForGpu(1));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->device(), "mlx5_2");
  EXPECT_EQ(path->port(), 1u);
  EXPECT_EQ(path->netdev(), "ens3np0");
  EXPECT_EQ(path->gid_index(), 3u);
  EXPECT_EQ(path->gid(), "0000:0000:0000:0000:0000:ffff:0a02:0007");
  EXPECT_EQ(path->qos_class(), "training");
  EXPECT_EQ(path->dscp(), 26u);
  EXPECT_EQ(path->traffic_class(), 106u);
  EXPECT_EQ(path->reason(), "closest NIC of GPU 1 (0000:11:00.0)");
}

TEST(ChooseJobPathTest, GpuByPciAddressAnyCaseAndAnotherQosClass) {
  NodeInventory inventory = FourNicsFourGpus();
  inventory.gpus[2].set_pci_address("0000:5c:00.0");
  weft::v1::ChoosePathRequest request;
  request.set_gpu_pci_address("0000:5C:00.0");
  request.set_qos_class("storage");
  absl::StatusOr<weft::v1::ChoosePathResponse> path = ChooseJobPath(inventory, request);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->device(), "mlx5_1");
  EXPECT_EQ(path->dscp(), 24u);
  EXPECT_EQ(path->traffic_class(), 98u);
}

TEST(ChooseJobPathTest, TheGidIsSearchedNotAssumedAtIndexThree) {
  NodeInventory inventory = FourNicsFourGpus();
  weft::v1::Nic& nic = inventory.nics[3];
  nic.clear_gids();
  // Slot 3 is RoCE v2 IPv4 but of another netdev (a VF or bond member); slot 5 is ours.
  AddGid(nic, 3, "0000:0000:0000:0000:0000:ffff:c0a8:0001", weft::v1::GID_TYPE_ROCE_V2,
         "ens4v1");
  AddGid(nic, 4, "fe80:0000:0000:0000:0000:0000:0000:0001", weft::v1::GID_TYPE_ROCE_V2,
         nic.netdev());
  AddGid(nic, 5, "0000:0000:0000:0000:0000:ffff:0a03:0007", weft::v1::GID_TYPE_ROCE_V2,
         nic.netdev());
  absl::StatusOr<weft::v1::ChoosePathResponse> path = ChooseJobPath(inventory, ForGpu(0));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->device(), "mlx5_3");
  EXPECT_EQ(path->gid_index(), 5u);
}

TEST(ChooseJobPathTest, ADownClosestNicFallsBackToTheFirstActivePortAndSaysWhy) {
  NodeInventory inventory = FourNicsFourGpus();
  inventory.nics[3].set_state(weft::v1::PORT_STATE_DOWN);
  inventory.nics[0].set_state(weft::v1::PORT_STATE_INIT);
  absl::StatusOr<weft::v1::ChoosePathResponse> path = ChooseJobPath(inventory, ForGpu(0));
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->device(), "mlx5_1");
  EXPECT_EQ(path->reason(),
            "GPU 0's closest NIC mlx5_3 is not usable (port 1: port is DOWN); first ACTIVE "
            "RoCE port instead");
}

TEST(ChooseJobPathTest, WithoutAGpuTheFirstActiveRocePort) {
  NodeInventory inventory = FourNicsFourGpus();
  inventory.nics[0].set_link_layer("InfiniBand");
  absl::StatusOr<weft::v1::ChoosePathResponse> path =
      ChooseJobPath(inventory, weft::v1::ChoosePathRequest());
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->device(), "mlx5_1");
  EXPECT_EQ(path->reason(), "first ACTIVE RoCE port (no GPU given)");
}

TEST(ChooseJobPathTest, UnknownGpuListsTheNodesGpus) {
  absl::StatusOr<weft::v1::ChoosePathResponse> path =
      ChooseJobPath(FourNicsFourGpus(), ForGpu(7));
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(path.status().message(),
            "no GPU with index 7 on this node; its GPUs: 0 (0000:10:00.0), 1 (0000:11:00.0), "
            "2 (0000:12:00.0), 3 (0000:13:00.0)");
  weft::v1::ChoosePathRequest by_pci;
  by_pci.set_gpu_pci_address("0000:99:00.0");
  EXPECT_EQ(ChooseJobPath(FourNicsFourGpus(), by_pci).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ChooseJobPathTest, UnknownQosClassNamesTheAcceptedOnes) {
  absl::StatusOr<weft::v1::ChoosePathResponse> path =
      ChooseJobPath(FourNicsFourGpus(), ForGpu(0, "bulk"));
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(path.status().message(),
            "unknown qos_class 'bulk'; accepted: training, storage, control");
}

TEST(ChooseJobPathTest, NoUsablePortSaysWhyForEachAndPointsAtTcp) {
  NodeInventory inventory = FourNicsFourGpus();
  inventory.nics.resize(2);
  inventory.nics[0].set_state(weft::v1::PORT_STATE_DOWN);
  inventory.nics[1].clear_gids();
  AddGid(inventory.nics[1], 0, "fe80:0000:0000:0000:0000:0000:0000:0001",
         weft::v1::GID_TYPE_IB_ROCE_V1, "ens2np0");
  absl::StatusOr<weft::v1::ChoosePathResponse> path = ChooseJobPath(inventory, ForGpu(3));
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(path.status().message(),
            "no ACTIVE RoCE port with a RoCE v2 IPv4 GID on this node (mlx5_0 port 1: port is "
            "DOWN; mlx5_1 port 1: no RoCE v2 GID with an IPv4-mapped address of ens2np0 in its "
            "1-entry GID table); jobs here must use TCP");
  EXPECT_EQ(ChooseJobPath(NodeInventory(), weft::v1::ChoosePathRequest()).status().message(),
            "no ACTIVE RoCE port with a RoCE v2 IPv4 GID on this node (no RDMA NICs "
            "discovered); jobs here must use TCP");
}

}  // namespace
}  // namespace weft::agent
