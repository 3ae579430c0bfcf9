#include "agent/linux/verbs_discovery.h"

#include <errno.h>

#include <filesystem>
#include <map>

#include "agent/linux/linux_backend.h"
#include "common/fake_clock.h"
#include "rdma/fake_verbs.h"
#include "rdma/verbs_ibv.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class NoEthtool : public EthtoolReader {
 public:
  absl::StatusOr<EthtoolStats> ReadStats(absl::string_view ifname) override {
    return absl::NotFoundError(absl::StrCat("no ethtool in this test: ", ifname));
  }
};

class VerbsDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = weft::testing::TempPath(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    ASSERT_TRUE(
        weft::testing::MaterializeFixture("tests/fixtures/mlx5_8nic_8gpu.tree", root_).ok());
    auto sysfs_only = Discover(LinuxBackendOptions{});
    ASSERT_TRUE(sysfs_only.ok()) << sysfs_only.status();
    sysfs_nics_ = sysfs_only->nics;
    ASSERT_EQ(sysfs_nics_.size(), 8u);
  }

  absl::StatusOr<NodeInventory> Discover(LinuxBackendOptions options) {
    options.root = root_;
    LinuxNicBackend backend(options, &ethtool_, &clock_);
    return backend.Discover();
  }

  // What libibverbs would report on the fixture node: every device, active RoCE
  // ports, the same GID table as sysfs, netdevs as ifindex 100 + NIC number.
  std::vector<rdma::FakeDeviceConfig> MatchingDevices() {
    std::vector<rdma::FakeDeviceConfig> devices;
    for (size_t i = 0; i < sysfs_nics_.size(); ++i) {
      const weft::v1::Nic& nic = sysfs_nics_[i];
      rdma::FakeDeviceConfig device = rdma::FakeDeviceConfig::Roce(nic.device(), 0);
      device.gids.clear();
      for (const weft::v1::GidEntry& entry : nic.gids()) {
        auto gid = rdma::Gid::Parse(entry.gid());
        EXPECT_TRUE(gid.ok()) << gid.status();
        device.gids.push_back(rdma::GidEntry{
            entry.index(), 1, *gid,
            entry.type() == weft::v1::GID_TYPE_ROCE_V2 ? rdma::GidType::kRoceV2
                                                       : rdma::GidType::kRoceV1,
            static_cast<uint32_t>(100 + i)});
      }
      devices.push_back(device);
      netdevs_[100 + i] = nic.netdev();
    }
    return devices;
  }

  LinuxBackendOptions WithVerbs(std::shared_ptr<rdma::Verbs> verbs) {
    LinuxBackendOptions options;
    options.verbs = std::move(verbs);
    options.verbs_no_device_reason = [] { return std::string("test: no device"); };
    options.netdev_of_ifindex = [this](uint32_t ifindex) { return netdevs_[ifindex]; };
    return options;
  }

  std::string root_;
  NoEthtool ethtool_;
  FakeClock clock_;
  std::vector<weft::v1::Nic> sysfs_nics_;
  std::map<uint32_t, std::string> netdevs_;
  rdma::FakeFabric fabric_;
};

TEST_F(VerbsDiscoveryTest, MatchingVerbsViewAddsPathMtuAndKeepsTheGidTable) {
  auto verbs = std::make_shared<rdma::FakeVerbs>(&fabric_, MatchingDevices());
  auto inventory = Discover(WithVerbs(verbs));
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  EXPECT_TRUE(inventory->notes.empty());
  ASSERT_EQ(inventory->nics.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const weft::v1::Nic& nic = inventory->nics[i];
    SCOPED_TRACE(nic.device());
    EXPECT_EQ(nic.discovered_by(), "verbs+sysfs");
    EXPECT_EQ(nic.active_mtu(), 4096u);
    EXPECT_EQ(nic.state(), weft::v1::PORT_STATE_ACTIVE);
    EXPECT_THAT(nic.discovery_warnings(), ElementsAre());
    ASSERT_EQ(nic.gids_size(), sysfs_nics_[i].gids_size());
    for (int g = 0; g < nic.gids_size(); ++g) {
      EXPECT_EQ(nic.gids(g).gid(), sysfs_nics_[i].gids(g).gid());
      EXPECT_EQ(nic.gids(g).type(), sysfs_nics_[i].gids(g).type());
      EXPECT_EQ(nic.gids(g).netdev(), sysfs_nics_[i].netdev());
    }
  }
}

TEST_F(VerbsDiscoveryTest, DisagreementsAreWarningsAndVerbsWins) {
  std::vector<rdma::FakeDeviceConfig> devices = MatchingDevices();
  devices[2].port.state = rdma::PortState::kDown;  // mlx5_2: link went down
  ASSERT_GE(devices[3].gids.size(), 4u);
  devices[3].gids[3].type = rdma::GidType::kRoceV1;  // mlx5_3 GID 3 retyped
  rdma::GidEntry extra = devices[4].gids.back();
  extra.index = 9;
  devices[4].gids.push_back(extra);  // mlx5_4: a GID sysfs did not show
  devices.pop_back();                // mlx5_7: no userspace provider
  auto verbs = std::make_shared<rdma::FakeVerbs>(&fabric_, devices);
  auto inventory = Discover(WithVerbs(verbs));
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  const auto& nics = inventory->nics;

  EXPECT_EQ(nics[2].state(), weft::v1::PORT_STATE_DOWN);
  EXPECT_THAT(nics[2].discovery_warnings(),
              ElementsAre(HasSubstr("sysfs says PORT_STATE_ACTIVE, libibverbs says "
                                    "PORT_STATE_DOWN")));
  EXPECT_EQ(nics[3].gids(3).type(), weft::v1::GID_TYPE_IB_ROCE_V1);
  EXPECT_THAT(nics[3].discovery_warnings(),
              ElementsAre(AllOf(HasSubstr("GID 3: sysfs says"), HasSubstr("RoCE v2"),
                                HasSubstr("libibverbs says"), HasSubstr("IB/RoCE v1"))));
  EXPECT_EQ(nics[4].gids_size(), sysfs_nics_[4].gids_size() + 1);
  EXPECT_THAT(nics[4].discovery_warnings(),
              ElementsAre(HasSubstr("GID 9 (")));
  EXPECT_EQ(nics[7].discovered_by(), "sysfs");
  EXPECT_THAT(nics[7].discovery_warnings(),
              ElementsAre(HasSubstr("mlx5_7 is in sysfs but libibverbs does not list it")));
  // The sysfs view of the NIC libibverbs cannot see is kept as it was.
  EXPECT_EQ(nics[7].gids_size(), sysfs_nics_[7].gids_size());
  EXPECT_THAT(nics[0].discovery_warnings(), ElementsAre());
}

TEST_F(VerbsDiscoveryTest, FailingDeviceListKeepsSysfsAndSaysWhy) {
  auto verbs = std::make_shared<rdma::FakeVerbs>(&fabric_, MatchingDevices());
  verbs->FailNextCall("ibv_get_device_list", ENOSYS);
  auto inventory = Discover(WithVerbs(verbs));
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_THAT(inventory->notes, ElementsAre(HasSubstr("discovery from sysfs only")));
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(inventory->nics[i].discovered_by(), "sysfs");
    EXPECT_EQ(inventory->nics[i].gids_size(), sysfs_nics_[i].gids_size());
    EXPECT_EQ(inventory->nics[i].active_mtu(), 0u);
  }
}

TEST_F(VerbsDiscoveryTest, OpenFailureIsAPerDeviceWarning) {
  auto verbs = std::make_shared<rdma::FakeVerbs>(&fabric_, MatchingDevices());
  verbs->FailNextCall("ibv_open_device", EACCES);
  auto inventory = Discover(WithVerbs(verbs));
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  EXPECT_THAT(inventory->nics[0].discovery_warnings(),
              ElementsAre(HasSubstr("libibverbs cannot open mlx5_0")));
  EXPECT_EQ(inventory->nics[0].discovered_by(), "sysfs");
  EXPECT_EQ(inventory->nics[1].discovered_by(), "verbs+sysfs");
}

// The real libibverbs of this machine. On a host without RDMA devices (CI: the kernel
// has no InfiniBand support) discovery must keep the sysfs view and say why; on an
// RDMA host the fixture's device names mean nothing, so the test is skipped there.
TEST_F(VerbsDiscoveryTest, RealLibibverbsWithoutDevicesFallsBackToSysfs) {
  auto ibv = std::make_shared<rdma::IbvVerbs>();
  auto devices = ibv->ListDevices();
  if (devices.ok() && !devices->empty()) {
    GTEST_SKIP() << "this host has " << devices->size()
                 << " RDMA device(s); the fixture-based check needs a host without any";
  }
  LinuxBackendOptions options;
  options.verbs = ibv;
  options.verbs_no_device_reason = [ibv] { return ibv->NoDeviceReason(); };
  auto inventory = Discover(options);
  ASSERT_TRUE(inventory.ok()) << inventory.status();
  ASSERT_EQ(inventory->notes.size(), 1u);
  EXPECT_THAT(inventory->notes[0], HasSubstr("discovery from sysfs only"));
  EXPECT_THAT(inventory->notes[0], HasSubstr("ibv_get_device_list"));
  EXPECT_EQ(inventory->nics[0].discovered_by(), "sysfs");
}

}  // namespace
}  // namespace weft::agent
