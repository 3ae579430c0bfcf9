#include "tests/fixture_tree.h"

#include <filesystem>
#include <fstream>

#include "common/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/subprocess.h"

namespace weft::testing {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  return ReadWholeFile(p.string()).value_or("");
}

TEST(FixtureTreeTest, HealthyNodeMirrorsSysfsThroughClassSymlinks) {
  const std::string root = TempPath("fixture_healthy");
  ASSERT_TRUE(MaterializeFixture("tests/fixtures/mlx5_8nic_8gpu.tree", root).ok());
  const fs::path port = fs::path(root) / "sys/class/infiniband/mlx5_3/ports/1";
  EXPECT_EQ(Read(port / "state"), "4: ACTIVE\n");
  EXPECT_EQ(Read(port / "rate"), "400 Gb/sec (4X NDR)\n");
  EXPECT_EQ(Read(port / "gid_attrs/types/3"), "RoCE v2\n");
  EXPECT_EQ(Read(port / "gid_attrs/ndevs/3"), "ens4f0np0\n");
  // device -> the PCI function, whose numa_node and net/ entry the backend reads.
  const fs::path device = fs::canonical(fs::path(root) / "sys/class/infiniband/mlx5_3/device");
  EXPECT_EQ(device.filename(), "0000:49:00.0");
  EXPECT_EQ(Read(device / "numa_node"), "0\n");
  EXPECT_TRUE(fs::exists(device / "net/ens4f0np0/mtu"));
  EXPECT_EQ(fs::canonical(fs::path(root) / "sys/bus/pci/devices/0000:49:00.0"), device);
  int devices = 0;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "sys/class/infiniband")) {
    (void)e;
    ++devices;
  }
  EXPECT_EQ(devices, 8);
}

TEST(FixtureTreeTest, NoCongestionGroupVariantLacksCnpFiles) {
  const std::string root = TempPath("fixture_nocc");
  ASSERT_TRUE(MaterializeFixture("tests/fixtures/mlx5_no_cc.tree", root).ok());
  const fs::path hw0 = fs::path(root) / "sys/class/infiniband/mlx5_0/ports/1/hw_counters";
  const fs::path hw1 = fs::path(root) / "sys/class/infiniband/mlx5_1/ports/1/hw_counters";
  EXPECT_TRUE(fs::exists(hw0 / "rp_cnp_handled"));
  EXPECT_FALSE(fs::exists(hw1 / "rp_cnp_handled"));
  EXPECT_TRUE(fs::exists(hw1 / "out_of_sequence"));
}

TEST(FixtureTreeTest, EscapesWriteTheStrayBlankLinesRealFilesHave) {
  const std::string tree = TempPath("escapes.tree");
  std::ofstream(tree) << "file a/link_layer = InfiniBand\\n\n"
                      << "file a/plain = 4: ACTIVE\n"
                      << "file a/bad = x\\q\n";
  const std::string root = TempPath("escapes_root");
  auto status = MaterializeFixture(tree, root);
  EXPECT_EQ(Read(fs::path(root) / "a/link_layer"), "InfiniBand\n\n");
  EXPECT_EQ(Read(fs::path(root) / "a/plain"), "4: ACTIVE\n");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("escapes.tree:3: bad escape"));
}

TEST(FixtureTreeTest, RejectsMalformedAndEscapingEntries) {
  const std::string bad = TempPath("bad.tree");
  std::ofstream(bad) << "file ok = 1\nfrobnicate x\n";
  auto status = MaterializeFixture(bad, TempPath("fixture_bad"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("bad.tree:2"));
  std::ofstream(bad, std::ios::trunc) << "file ../escape = 1\n";
  EXPECT_EQ(MaterializeFixture(bad, TempPath("fixture_bad")).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::testing
