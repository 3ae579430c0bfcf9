#include "agent/tunables/applier.h"

#include "agent/linux/sysfs.h"
#include "agent/tunables/fake_dcb_client.h"
#include "agent/tunables/linux_tunables.h"
#include "agent/tunables/tunable_params.h"
#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fixture_tree.h"
#include "tests/subprocess.h"

namespace weft::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Passes everything through to `inner`, except that the `fail_at`-th Write (1-based,
// counted over every FailingNicTunables sharing `writes`) fails with a firmware-like
// error: the "write that fails midway".
class FailingNicTunables : public NicTunables {
 public:
  FailingNicTunables(NicTunables* inner, int* writes, int fail_at, int fail_restore_at = 0)
      : inner_(inner), writes_(writes), fail_at_(fail_at), fail_restore_at_(fail_restore_at) {}
  const std::string& device() const override { return inner_->device(); }
  std::vector<std::string> Parameters() const override { return inner_->Parameters(); }
  absl::StatusOr<std::string> Read(absl::string_view p) override { return inner_->Read(p); }
  absl::Status Write(absl::string_view p, absl::string_view v) override {
    ++*writes_;
    if (*writes_ == fail_at_ || *writes_ == fail_restore_at_) {
      return absl::UnavailableError("simulated: the firmware refused the command");
    }
    return inner_->Write(p, v);
  }

 private:
  NicTunables* inner_;
  int* writes_;
  int fail_at_;
  int fail_restore_at_;
};

weft::v1::DesiredState RecipeState() {
  weft::v1::DesiredState state;
  state.set_node_name("node-1");
  state.set_version(4);
  state.set_nonce("n4");
  *state.mutable_qos() = RecipeQos();
  *state.mutable_dcqcn() = DefaultDcqcnParams();
  state.mutable_dcqcn()->clear_rp_enabled_priorities();  // debugfs node: no switches
  state.mutable_dcqcn()->clear_np_enabled_priorities();
  state.mutable_dcqcn()->set_rp_ai_rate(10);
  state.mutable_dcqcn()->set_rp_hai_rate(100);
  state.mutable_dcqcn()->set_np_min_time_between_cnps(0);
  return state;
}

class ApplierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = weft::testing::TempPath(::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const char* tree : {"tests/fixtures/mlx5_no_cc.tree", "agent/tunables/testdata/cc_params.tree",
                             "agent/tunables/testdata/rdma_cm.tree"}) {
      ASSERT_TRUE(weft::testing::MaterializeFixture(tree, root_).ok()) << tree;
    }
    // What the kernel does on mkdir of mlx5_1's rdma_cm group.
    ASSERT_TRUE(weft::testing::WriteFixtureFile(
                    root_, "sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos", "0").ok());
    dcb_.AddNetdev("ens1f0np0");
    dcb_.AddNetdev("ens2f0np0");
    for (const auto& [device, pci, netdev] :
         {std::tuple{"mlx5_0", "0000:19:00.0", "ens1f0np0"},
          std::tuple{"mlx5_1", "0000:29:00.0", "ens2f0np0"}}) {
      weft::v1::Nic nic;
      nic.set_device(device);
      nic.set_port(1);
      nic.set_pci_address(pci);
      nic.set_netdev(netdev);
      owned_.push_back(MakeLinuxNicTunables(root_, nic, &dcb_));
      nics_.push_back(owned_.back().get());
    }
  }

  // Every parameter of every NIC, as read now.
  std::map<std::string, std::string> Snapshot() {
    std::map<std::string, std::string> out;
    for (NicTunables* nic : nics_) {
      for (const std::string& name : nic->Parameters()) {
        absl::StatusOr<std::string> value = nic->Read(name);
        out[nic->device() + " " + name] = value.ok() ? *value : value.status().ToString();
      }
    }
    return out;
  }
  std::string File(const std::string& path) { return *Sysfs(root_).ReadString(path); }

  std::string root_;
  FakeDcbClient dcb_;
  std::vector<std::unique_ptr<NicTunables>> owned_;
  std::vector<NicTunables*> nics_;
};

TEST_F(ApplierTest, AppliesReadsBackAndAcks) {
  ApplyOutcome outcome = ApplyDesiredState(RecipeState(), nics_, /*dry_run=*/false);
  for (const auto& e : outcome.errors) ADD_FAILURE() << FormatParameterError(e);
  ASSERT_TRUE(outcome.accepted);
  // 8 changes per NIC: ets, pfc, dscp map, trust, tos, rp_ai_rate, rp_hai_rate, np_min_time...
  EXPECT_THAT(outcome.changes, SizeIs(16));
  EXPECT_EQ(File("sys/kernel/debug/mlx5/0000:29:00.0/cc_params/rp_ai_rate"), "10");
  EXPECT_EQ(File("sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "106");
  EXPECT_EQ(dcb_.state("ens2f0np0").pfc.pfc_en, 0x08);
  // np_cnp_prio was already 6, but its mode was 1: the state leaves mode alone (unset).
  EXPECT_EQ(File("sys/kernel/debug/mlx5/0000:19:00.0/cc_params/np_cnp_prio_mode"), "1");
  std::map<std::string, std::string> read_back;
  for (const auto& v : outcome.read_back) read_back[v.device() + " " + v.parameter()] = v.value();
  EXPECT_EQ(read_back["mlx5_1 rp_hai_rate"], "100");
  EXPECT_EQ(read_back["mlx5_0 dscp_to_priority"], "0:0,26:3,48:6");
  EXPECT_EQ(read_back["mlx5_0 trust"], "dscp");

  // Idempotent: the same state again changes nothing and ACKs.
  ApplyOutcome again = ApplyDesiredState(RecipeState(), nics_, false);
  EXPECT_TRUE(again.accepted);
  EXPECT_THAT(again.changes, IsEmpty());
}

TEST_F(ApplierTest, WriteFailingMidwayRestoresEverythingAndNacksNamingIt) {
  const auto before = Snapshot();
  int writes = 0;
  // Write 11 is mlx5_1's 3rd parameter (dscp_to_priority) after all of mlx5_0's 8.
  FailingNicTunables nic0(nics_[0], &writes, 11), nic1(nics_[1], &writes, 11);
  ApplyOutcome outcome = ApplyDesiredState(RecipeState(), {&nic0, &nic1}, false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_THAT(outcome.errors, SizeIs(1));
  EXPECT_EQ(outcome.errors[0].device(), "mlx5_1");
  EXPECT_EQ(outcome.errors[0].parameter(), "dscp_to_priority");
  EXPECT_EQ(outcome.errors[0].value(), "0:0,26:3,48:6");
  EXPECT_THAT(outcome.errors[0].reason(), HasSubstr("write failed: simulated: the firmware refused"));
  EXPECT_EQ(Snapshot(), before);  // every value as it was, on both NICs
  EXPECT_EQ(File("sys/kernel/debug/mlx5/0000:19:00.0/cc_params/rp_ai_rate"), "5");
  EXPECT_THAT(outcome.changes, IsEmpty());
}

TEST_F(ApplierTest, DriverRefusalMidwayRestoresEverything) {
  const auto before = Snapshot();
  dcb_.FailSet(4, absl::InvalidArgumentError("ens1f0np0: RTM_SETDCB: Invalid argument"));
  ApplyOutcome outcome = ApplyDesiredState(RecipeState(), nics_, false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_FALSE(outcome.errors.empty());
  EXPECT_THAT(outcome.errors[0].reason(), HasSubstr("RTM_SETDCB: Invalid argument"));
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(ApplierTest, FailedRestoreIsReportedToo) {
  int writes = 0;
  // Write 3 fails (dscp_to_priority of mlx5_0); the restores run in reverse: dscp map
  // (write 4), pfc (write 5, fails as well), ets (write 6).
  FailingNicTunables nic0(nics_[0], &writes, 3, 5), nic1(nics_[1], &writes, 3, 5);
  ApplyOutcome outcome = ApplyDesiredState(RecipeState(), {&nic0, &nic1}, false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_THAT(outcome.errors, SizeIs(2));
  EXPECT_EQ(outcome.errors[1].parameter(), "pfc_priorities");
  EXPECT_EQ(outcome.errors[1].value(), "none");
  EXPECT_THAT(outcome.errors[1].reason(), HasSubstr("restore failed"));
}

TEST_F(ApplierTest, DryRunWritesNothingAndSaysWhatWouldChange) {
  const auto before = Snapshot();
  ApplyOutcome dry = ApplyDesiredState(RecipeState(), nics_, /*dry_run=*/true);
  EXPECT_FALSE(dry.accepted);
  EXPECT_THAT(dry.changes, SizeIs(16));
  EXPECT_THAT(dry.errors, SizeIs(16));
  EXPECT_THAT(dry.errors[0].reason(), HasSubstr("dry run: would change from"));
  EXPECT_EQ(FormatChange(dry.changes[5]), "mlx5_0 rp_ai_rate 5 -> 10");
  EXPECT_EQ(Snapshot(), before);
  // Once the NICs have it, a dry run ACKs: an ACK always means the NIC has the state.
  ASSERT_TRUE(ApplyDesiredState(RecipeState(), nics_, false).accepted);
  EXPECT_TRUE(ApplyDesiredState(RecipeState(), nics_, true).accepted);
}

TEST_F(ApplierTest, InvalidStateIsRefusedBeforeTouchingAnything) {
  const auto before = Snapshot();
  weft::v1::DesiredState state = RecipeState();
  state.mutable_dcqcn()->set_rp_gd(99);
  ApplyOutcome outcome = ApplyDesiredState(state, nics_, false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_THAT(outcome.errors, SizeIs(1));
  EXPECT_EQ(outcome.errors[0].parameter(), "rp_gd");
  EXPECT_THAT(outcome.errors[0].reason(), HasSubstr("0..15"));
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(ApplierTest, ParameterTheNodeLacksIsRefusedPerNicBeforeWriting) {
  const auto before = Snapshot();
  weft::v1::DesiredState state = RecipeState();
  state.mutable_dcqcn()->add_rp_enabled_priorities(3);
  ApplyOutcome outcome = ApplyDesiredState(state, nics_, false);
  EXPECT_FALSE(outcome.accepted);
  ASSERT_THAT(outcome.errors, SizeIs(2));  // one per NIC
  EXPECT_EQ(outcome.errors[1].device(), "mlx5_1");
  EXPECT_EQ(outcome.errors[1].parameter(), "rp_enabled_priorities");
  EXPECT_THAT(outcome.errors[1].reason(), HasSubstr("MLNX_OFED only"));
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(ApplierTest, DriftIsWhatChangedBehindTheAgentsBack) {
  ASSERT_TRUE(ApplyDesiredState(RecipeState(), nics_, false).accepted);
  EXPECT_THAT(CheckDrift(RecipeState(), nics_), IsEmpty());
  ASSERT_TRUE(weft::testing::WriteFixtureFile(
                  root_, "sys/kernel/debug/mlx5/0000:29:00.0/cc_params/rp_ai_rate", "7").ok());
  dcb_.state("ens1f0np0").pfc.pfc_en = 0;  // someone ran mlnx_qos --pfc 0,0,0,0,0,0,0,0
  std::vector<weft::v1::TunableDrift> drift = CheckDrift(RecipeState(), nics_);
  ASSERT_THAT(drift, SizeIs(2));
  EXPECT_EQ(drift[0].device(), "mlx5_0");
  EXPECT_EQ(drift[0].parameter(), "pfc_priorities");
  EXPECT_EQ(drift[0].expected(), "3");
  EXPECT_EQ(drift[0].actual(), "none");
  EXPECT_EQ(drift[1].device(), "mlx5_1");
  EXPECT_EQ(drift[1].parameter(), "rp_ai_rate");
  EXPECT_EQ(drift[1].actual(), "7");
}

}  // namespace
}  // namespace weft::agent
