#include "agent/tunables/linux_tunables.h"

#include "agent/linux/sysfs.h"
#include "agent/tunables/fake_dcb_client.h"
#include "agent/tunables/tunable_params.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

weft::v1::Nic Nic0() {
  weft::v1::Nic nic;
  nic.set_device("mlx5_0");
  nic.set_port(1);
  nic.set_pci_address("0000:19:00.0");
  nic.set_netdev("ens1f0np0");
  return nic;
}

class LinuxTunablesTest : public ::testing::Test {
 protected:
  void Materialize(const std::vector<std::string>& overlays) {
    root_ = weft::testing::TempPath(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(weft::testing::MaterializeFixture("tests/fixtures/mlx5_no_cc.tree", root_).ok());
    for (const std::string& overlay : overlays) {
      absl::Status status =
          weft::testing::MaterializeFixture("agent/tunables/testdata/" + overlay, root_);
      ASSERT_TRUE(status.ok()) << status;
    }
    dcb_.AddNetdev("ens1f0np0");
    dcb_.AddNetdev("ens2f0np0");
  }
  std::string File(const std::string& path) { return *Sysfs(root_).ReadString(path); }

  std::string root_;
  FakeDcbClient dcb_;
};

TEST_F(LinuxTunablesTest, CurrentKernelUsesDebugfsCcParams) {
  Materialize({"cc_params.tree", "rdma_cm.tree"});
  auto nic = MakeLinuxNicTunables(root_, Nic0(), &dcb_);
  EXPECT_THAT(nic->Parameters(), Contains("np_cnp_prio_mode"));
  EXPECT_THAT(nic->Parameters(), Not(Contains("rp_enabled_priorities")));
  EXPECT_EQ(*nic->Read("rp_ai_rate"), "5");
  EXPECT_EQ(*nic->Read("np_cnp_prio_mode"), "1");
  ASSERT_TRUE(nic->Write("rp_ai_rate", "40").ok());
  EXPECT_EQ(File("sys/kernel/debug/mlx5/0000:19:00.0/cc_params/rp_ai_rate"), "40");
  EXPECT_EQ(*nic->Read("rp_ai_rate"), "40");

  absl::StatusOr<std::string> enables = nic->Read("rp_enabled_priorities");
  EXPECT_EQ(enables.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(enables.status().message(), HasSubstr("MLNX_OFED only"));
  EXPECT_THAT(nic->Write("rp_enabled_priorities", "3").message(), HasSubstr("ROCE_CC_PRIO_MASK_P1"));
}

TEST_F(LinuxTunablesTest, OfedDriverUsesTheEcnTreeWithPerPrioritySwitches) {
  Materialize({"ofed_ecn.tree"});
  auto nic = MakeLinuxNicTunables(root_, Nic0(), &dcb_);
  EXPECT_EQ(*nic->Read("rp_ai_rate"), "5");
  EXPECT_EQ(*nic->Read("np_cnp_prio"), "6");
  EXPECT_EQ(*nic->Read("rp_enabled_priorities"), "0,1,2,3,4,5,6,7");
  ASSERT_TRUE(nic->Write("np_cnp_prio", "5").ok());
  EXPECT_EQ(File("sys/class/net/ens1f0np0/ecn/roce_np/cnp_802p_prio"), "5");
  ASSERT_TRUE(nic->Write("rp_enabled_priorities", "0,1,2,4,5,6,7").ok());
  EXPECT_EQ(File("sys/class/net/ens1f0np0/ecn/roce_rp/enable/3"), "0");
  EXPECT_EQ(File("sys/class/net/ens1f0np0/ecn/roce_rp/enable/4"), "1");
  EXPECT_EQ(*nic->Read("rp_enabled_priorities"), "0,1,2,4,5,6,7");
  EXPECT_THAT(nic->Read("np_cnp_prio_mode").status().message(), HasSubstr("no np_cnp_prio_mode"));
}

TEST_F(LinuxTunablesTest, BothTreesScalarsFromDebugfsSwitchesFromEcn) {
  Materialize({"cc_params.tree", "ofed_ecn.tree"});
  auto nic = MakeLinuxNicTunables(root_, Nic0(), &dcb_);
  ASSERT_TRUE(nic->Write("rp_hai_rate", "100").ok());
  EXPECT_EQ(File("sys/kernel/debug/mlx5/0000:19:00.0/cc_params/rp_hai_rate"), "100");
  EXPECT_EQ(File("sys/class/net/ens1f0np0/ecn/roce_rp/rpg_hai_rate"), "50");
  EXPECT_EQ(*nic->Read("np_enabled_priorities"), "0,1,2,3,4,5,6,7");
}

TEST_F(LinuxTunablesTest, NodeWithoutInterfacesSaysWhereItLooked) {
  Materialize({});
  auto nic = MakeLinuxNicTunables(root_, Nic0(), &dcb_);
  absl::StatusOr<std::string> ai = nic->Read("rp_ai_rate");
  EXPECT_EQ(ai.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(ai.status().message(), HasSubstr(root_ + "/sys/kernel/debug/mlx5/0000:19:00.0/cc_params"));
  EXPECT_THAT(ai.status().message(), HasSubstr("mount debugfs"));
  EXPECT_THAT(nic->Read("default_roce_tos").status().message(),
              HasSubstr(root_ + "/sys/kernel/config/rdma_cm (mount configfs, load rdma_cm)"));
  EXPECT_EQ(*nic->Read("pfc_priorities"), "none");  // DCB still works
}

TEST_F(LinuxTunablesTest, RdmaCmToSInConfigfs) {
  Materialize({"rdma_cm.tree"});
  auto nic0 = MakeLinuxNicTunables(root_, Nic0(), &dcb_);
  EXPECT_EQ(*nic0->Read("default_roce_tos"), "0");
  ASSERT_TRUE(nic0->Write("default_roce_tos", "106").ok());
  EXPECT_EQ(File("sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"), "106");

  // mlx5_1 has no group yet: rdma_cm uses ToS 0; writing makes the group (mkdir), which
  // the kernel would fill with ports/; a fixture tree cannot, so the write then fails
  // naming the file.
  weft::v1::Nic nic1 = Nic0();
  nic1.set_device("mlx5_1");
  auto tunables1 = MakeLinuxNicTunables(root_, nic1, &dcb_);
  EXPECT_EQ(*tunables1->Read("default_roce_tos"), "0");
  absl::Status written = tunables1->Write("default_roce_tos", "106");
  EXPECT_TRUE(Sysfs(root_).Exists("sys/kernel/config/rdma_cm/mlx5_1"));
  EXPECT_EQ(written.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(written.message(), HasSubstr("rdma_cm/mlx5_1/ports/1/default_roce_tos"));
}

TEST_F(LinuxTunablesTest, DcbQosThroughNetlinkClient) {
  Materialize({});
  auto nic = MakeLinuxNicTunables(root_, Nic0(), &dcb_);
  EXPECT_EQ(*nic->Read("trust"), "pcp");
  EXPECT_EQ(*nic->Read("ets"),
            "prio_tc 0,1,2,3,4,5,6,7 tsa ets,ets,ets,ets,ets,ets,ets,ets bw 12,12,12,12,13,13,13,13");
  const std::string ets =
      "prio_tc 0,0,0,3,0,0,6,0 tsa ets,strict,strict,ets,strict,strict,strict,strict "
      "bw 50,0,0,50,0,0,0,0";
  ASSERT_TRUE(nic->Write("ets", ets).ok());
  EXPECT_EQ(*nic->Read("ets"), ets);
  EXPECT_EQ(dcb_.state("ens1f0np0").ets.ets_cap, 8);  // untouched fields kept
  ASSERT_TRUE(nic->Write("pfc_priorities", "3").ok());
  EXPECT_EQ(dcb_.state("ens1f0np0").pfc.pfc_en, 0x08);
  ASSERT_TRUE(nic->Write("dscp_to_priority", "26:3,48:6").ok());
  EXPECT_EQ(*nic->Read("trust"), "dscp");
  ASSERT_TRUE(nic->Write("dscp_to_priority", "26:4").ok());  // remap one, drop one
  EXPECT_EQ(*nic->Read("dscp_to_priority"), "26:4");
  ASSERT_TRUE(nic->Write("dscp_to_priority", "none").ok());
  EXPECT_EQ(*nic->Read("trust"), "pcp");
  // The driver's refusal comes back as the write's error.
  absl::Status refused = nic->Write("ets", "prio_tc 0,0,0,0,0,0,0,0 tsa ets,ets,ets,ets,ets,ets,ets,ets bw 10,0,0,0,0,0,0,0");
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::agent
