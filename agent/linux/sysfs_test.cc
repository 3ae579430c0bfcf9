#include "agent/linux/sysfs.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SysfsParseTest, PortStates) {
  EXPECT_EQ(*ParsePortState("4: ACTIVE"), weft::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(*ParsePortState("1: DOWN"), weft::v1::PORT_STATE_DOWN);
  EXPECT_EQ(*ParsePortState("5: ACTIVE_DEFER"), weft::v1::PORT_STATE_ACTIVE_DEFER);
  EXPECT_FALSE(ParsePortState("ACTIVE").ok());
  EXPECT_FALSE(ParsePortState("9: WHAT").ok());
  EXPECT_FALSE(ParsePortState("").ok());
}

TEST(SysfsParseTest, RatesInMbps) {
  EXPECT_EQ(*ParseRateMbps("400 Gb/sec (4X NDR)"), 400000u);
  EXPECT_EQ(*ParseRateMbps("100 Gb/sec (4X EDR)"), 100000u);
  EXPECT_EQ(*ParseRateMbps("25 Gb/sec (1X EDR)"), 25000u);
  EXPECT_EQ(*ParseRateMbps("2.5 Gb/sec (1X SDR)"), 2500u);
  EXPECT_THAT(ParseRateMbps("fast").status().message(), HasSubstr("'fast'"));
  EXPECT_FALSE(ParseRateMbps("-1 Gb/sec").ok());
}

TEST(SysfsParseTest, GidTypesAndIntegers) {
  EXPECT_EQ(*ParseGidType("RoCE v2"), weft::v1::GID_TYPE_ROCE_V2);
  EXPECT_EQ(*ParseGidType("IB/RoCE v1"), weft::v1::GID_TYPE_IB_ROCE_V1);
  EXPECT_FALSE(ParseGidType("roce v2").ok());
  EXPECT_EQ(*ParseU64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(*ParseU64(" 0x030200\n"), 0x030200u);
  EXPECT_FALSE(ParseU64("-1").ok());
  EXPECT_FALSE(ParseU64("12abc").ok());
  EXPECT_FALSE(ParseU64("18446744073709551616").ok());
  EXPECT_FALSE(ParseU64("").ok());
}

TEST(SysfsParseTest, ValuesAreTrimmedAndNoPmaIsRecognised) {
  EXPECT_EQ(TrimSysfsValue("InfiniBand\n"), "InfiniBand");
  EXPECT_EQ(TrimSysfsValue("4: ACTIVE\n\n"), "4: ACTIVE");
  EXPECT_EQ(TrimSysfsValue(" \t\r\n"), "");
  EXPECT_EQ(TrimSysfsValue("RoCE v2"), "RoCE v2");  // inner spaces stay
  EXPECT_TRUE(IsNoPma("N/A (no PMA)\n"));
  EXPECT_FALSE(IsNoPma("N/A"));
  EXPECT_FALSE(IsNoPma("0"));
}

class SysfsFixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = weft::testing::TempPath("sysfs_test_root");
    ASSERT_TRUE(
        weft::testing::MaterializeFixture("tests/fixtures/mlx5_no_cc.tree", root_).ok());
  }
  std::string root_;
};

TEST_F(SysfsFixtureTest, ReadsThroughClassSymlinks) {
  Sysfs sysfs(root_);
  EXPECT_THAT(*sysfs.List("/sys/class/infiniband"), ElementsAre("mlx5_0", "mlx5_1"));
  EXPECT_EQ(*sysfs.ReadString("sys/class/infiniband/mlx5_1/ports/1/state"), "4: ACTIVE");
  EXPECT_EQ(*sysfs.LinkTargetName("sys/class/infiniband/mlx5_1/device"), "0000:29:00.0");
  EXPECT_EQ(*sysfs.ReadI64("sys/class/infiniband/mlx5_1/device/numa_node"), 0);
  auto resolved = sysfs.Resolve("sys/class/infiniband/mlx5_0/device");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0");
}

TEST_F(SysfsFixtureTest, ReadsTrimStrayBlankLinesOfOpenAndClosedFiles) {
  const std::string path = "sys/class/infiniband/mlx5_1/ports/1/link_layer";
  ASSERT_TRUE(weft::testing::WriteFixtureFile(root_, path, "Ethernet\n\n").ok());
  Sysfs sysfs(root_);
  EXPECT_EQ(*sysfs.ReadString(path), "Ethernet");
  absl::StatusOr<SysfsFile> file = SysfsFile::Open(sysfs, path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file->ReadString(), "Ethernet");
  const std::string counter = "sys/class/infiniband/mlx5_1/ports/1/counters/link_downed";
  ASSERT_TRUE(weft::testing::WriteFixtureFile(root_, counter, "  17\n").ok());
  EXPECT_EQ(*SysfsFile::Open(sysfs, counter)->ReadU64(), 17u);
}

TEST_F(SysfsFixtureTest, ErrorsNameThePathAndKind) {
  Sysfs sysfs(root_);
  auto missing = sysfs.ReadU64("sys/class/infiniband/mlx5_1/ports/1/hw_counters/rp_cnp_handled");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(root_ + "/sys/class/infiniband/mlx5_1"));
  ASSERT_TRUE(weft::testing::WriteFixtureFile(
                  root_, "sys/class/infiniband/mlx5_0/ports/1/counters/link_downed", "garbage")
                  .ok());
  auto garbage = sysfs.ReadU64("sys/class/infiniband/mlx5_0/ports/1/counters/link_downed");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("read 'garbage'"));
  EXPECT_EQ(sysfs.List("sys/class/nothing").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SysfsFixtureTest, WritesReplaceTheValueAndFailuresNameThePath) {
  Sysfs sysfs(root_);
  const std::string mtu = "sys/class/net/ens1f0np0/mtu";
  ASSERT_TRUE(sysfs.WriteString(mtu, "9000").ok());
  EXPECT_EQ(*sysfs.ReadString(mtu), "9000");
  ASSERT_TRUE(sysfs.WriteString(mtu, "42").ok());  // shorter: the old tail is gone
  EXPECT_EQ(*sysfs.ReadU64(mtu), 42u);
  absl::Status missing = sysfs.WriteString("sys/class/net/ens1f0np0/nothing/x", "1");
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr(root_ + "/sys/class/net/ens1f0np0/nothing/x"));
  ASSERT_TRUE(sysfs.MakeDir("sys/kernel").ok());
  ASSERT_TRUE(sysfs.MakeDir("sys/kernel").ok());  // already there: fine
  EXPECT_TRUE(sysfs.Exists("sys/kernel"));
}

}  // namespace
}  // namespace weft
