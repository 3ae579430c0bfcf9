#include "datapath/transport/rdma_path.h"

#include <vector>

#include "gtest/gtest.h"
#include "rdma/fake_verbs.h"

namespace weft::datapath {
namespace {

using rdma::FakeDeviceConfig;
using rdma::FakeFabric;
using rdma::FakeVerbs;
using rdma::Gid;
using rdma::LinkLayer;
using rdma::PortState;

FakeDeviceConfig Down(std::string name) {
  FakeDeviceConfig device = FakeDeviceConfig::Roce(std::move(name), 0x0a000009);
  device.port.state = PortState::kDown;
  return device;
}

TEST(ChooseRdmaPathTest, FirstActiveDeviceAndItsRoceV2Gid) {
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {Down("mlx5_0"), FakeDeviceConfig::Roce("mlx5_1", 0x0a000102, 9)});
  auto path = ChooseRdmaPath(verbs, {});
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(path->device, "mlx5_1");
  EXPECT_EQ(path->gid.index, 3u);
  EXPECT_EQ(path->gid.gid, Gid::FromIpv4(0x0a000102));
  EXPECT_EQ(path->port_attributes.active_mtu_bytes, 4096u);
}

TEST(ChooseRdmaPathTest, NamedDeviceMustBeActive) {
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {Down("mlx5_0"), FakeDeviceConfig::Roce("mlx5_1", 0x0a000102)});
  RdmaPathQuery query;
  query.device = "mlx5_0";
  EXPECT_EQ(ChooseRdmaPath(verbs, query).status().message(), "mlx5_0 port 1 is not active");
  query.device = "mlx5_7";
  EXPECT_EQ(ChooseRdmaPath(verbs, query).status().code(), absl::StatusCode::kNotFound);
}

TEST(ChooseRdmaPathTest, NoDevicesOrNoActivePort) {
  FakeFabric fabric;
  FakeVerbs none(&fabric, {});
  EXPECT_EQ(ChooseRdmaPath(none, {}).status().message(),
            "no RDMA device (ibv_get_device_list returned 0 devices)");
  FakeVerbs down(&fabric, {Down("mlx5_0"), Down("mlx5_1")});
  EXPECT_EQ(ChooseRdmaPath(down, {}).status().message(),
            "no RDMA device has port 1 active (mlx5_0, mlx5_1)");
}

TEST(ChooseRdmaPathTest, InfiniBandPortsAreRefused) {
  FakeFabric fabric;
  FakeDeviceConfig ib = FakeDeviceConfig::Roce("mlx5_0", 0x0a000001);
  ib.port.link_layer = LinkLayer::kInfiniBand;
  FakeVerbs verbs(&fabric, {ib});
  EXPECT_EQ(ChooseRdmaPath(verbs, {}).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ChooseRdmaPathTest, NetdevAndFixedIndex) {
  FakeFabric fabric;
  FakeVerbs verbs(&fabric, {FakeDeviceConfig::Roce("mlx5_0", 0x0a000001, 4)});
  RdmaPathQuery query;
  query.netdev_ifindex = 5;  // not this device's netdev
  auto wrong = ChooseRdmaPath(verbs, query);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(wrong.status().message().find("mlx5_0: no RoCE v2 GID"), absl::string_view::npos);
  query.netdev_ifindex = 0;
  query.gid_index = 1;
  auto fixed = ChooseRdmaPath(verbs, query);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->gid.index, 1u);
  query.gid_index = 12;  // an empty slot
  EXPECT_EQ(ChooseRdmaPath(verbs, query).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::datapath
