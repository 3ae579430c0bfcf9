// Tests of IbvVerbs against the real libibverbs. Without an RDMA device (the build
// machines have none, and a kernel without InfiniBand) only the device-less behaviour
// runs; the device tests skip and say why.
#include "rdma/verbs_ibv.h"

#include <cstdio>
#include <vector>

#include "gtest/gtest.h"

namespace weft::rdma {
namespace {

TEST(IbvVerbsTest, ListDevicesNeverFailsForMissingKernelSupport) {
  IbvVerbs verbs;
  absl::StatusOr<std::vector<DeviceInfo>> devices = verbs.ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  if (devices->empty()) {
    EXPECT_NE(verbs.NoDeviceReason(), "");
    std::printf("no RDMA device found: %s\n", verbs.NoDeviceReason().c_str());
  } else {
    EXPECT_EQ(verbs.NoDeviceReason(), "");
  }
}

TEST(IbvVerbsTest, OpenUnknownDeviceNamesWhatIsPresent) {
  IbvVerbs verbs;
  absl::StatusOr<std::vector<DeviceInfo>> devices = verbs.ListDevices();
  ASSERT_TRUE(devices.ok());
  absl::StatusOr<std::unique_ptr<VerbsContext>> context = verbs.OpenDevice("no_such_dev9");
  EXPECT_EQ(context.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(context.status().message().find("no_such_dev9"), absl::string_view::npos);
}

// Runs only where ibv_get_device_list finds a device: open it, read port 1 and the GID
// table, and take an RC QP to INIT.
TEST(IbvVerbsTest, RealDeviceBringUp) {
  IbvVerbs verbs;
  absl::StatusOr<std::vector<DeviceInfo>> devices = verbs.ListDevices();
  ASSERT_TRUE(devices.ok());
  if (devices->empty()) {
    GTEST_SKIP() << "no RDMA device on this machine (" << verbs.NoDeviceReason()
                 << "); the real-device bring-up test needs one";
  }
  absl::StatusOr<std::unique_ptr<VerbsContext>> context = verbs.OpenDevice((*devices)[0].name);
  ASSERT_TRUE(context.ok()) << context.status();
  absl::StatusOr<PortAttributes> port = verbs.QueryPort(context->get(), 1);
  ASSERT_TRUE(port.ok()) << port.status();
  absl::StatusOr<std::vector<GidEntry>> gids = verbs.QueryGidTable(context->get());
  ASSERT_TRUE(gids.ok()) << gids.status();
  auto pd = verbs.AllocPd(context->get());
  ASSERT_TRUE(pd.ok()) << pd.status();
  auto cq = verbs.CreateCq(context->get(), 16, nullptr);
  ASSERT_TRUE(cq.ok()) << cq.status();
  auto qp = verbs.CreateRcQp(pd->get(), cq->get(), cq->get(), QpCapabilities());
  ASSERT_TRUE(qp.ok()) << qp.status();
  QpAttributes attr;
  attr.state = QpState::kInit;
  attr.port = 1;
  attr.access_flags = kAccessLocalWrite | kAccessRemoteWrite;
  ASSERT_TRUE(verbs
                  .ModifyQp(qp->get(), attr,
                            kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags)
                  .ok());
  absl::StatusOr<QpState> state = verbs.QueryQpState(qp->get());
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(*state, QpState::kInit);
  std::vector<char> buffer(4096);
  auto mr = verbs.RegisterMr(pd->get(), buffer.data(), buffer.size(),
                             kAccessLocalWrite | kAccessRemoteWrite);
  ASSERT_TRUE(mr.ok()) << mr.status();
  EXPECT_EQ((*mr)->length(), buffer.size());
}

}  // namespace
}  // namespace weft::rdma
