#include "policy/policy.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/qos_classes.h"
#include "common/tunable_ranges.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace weft::policy {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kExample[] = "deploy/examples/policy.yaml";

// A small valid policy the tests break one field at a time.
constexpr char kMinimal[] = R"(qos:
  trust: dscp
  classes:
    - {name: training, dscp: 26, priority: 3, lossless: true, roce: true}
    - {name: cnp, dscp: 48, priority: 6, cnp: true}
  traffic_classes:
    - {tc: 0, priorities: [0, 1, 2, 4, 5, 7], tsa: ets, bandwidth_percent: 50}
    - {tc: 3, priorities: [3], tsa: ets, bandwidth_percent: 50}
    - {tc: 6, priorities: [6], tsa: strict}
dcqcn:
  profiles:
    - name: slow
      params: {rp_ai_rate: 2}
  assignments:
    - {profile: slow, racks: [rack-2]}
)";

weft::v1::NodeInfo Node(const std::string& name, const std::string& rack,
                        const std::string& pod = "pod-1") {
  weft::v1::NodeInfo node;
  node.set_name(name);
  node.set_rack(rack);
  node.set_pod(pod);
  return node;
}

absl::Status ParseWith(const std::string& from, const std::string& to) {
  const std::string yaml = absl::StrReplaceAll(kMinimal, {{from, to}});
  EXPECT_NE(yaml, kMinimal) << "the test's replacement did not apply: " << from;
  return ParsePolicy(yaml, "p.yaml").status();
}

TEST(PolicyTest, ExampleLoadsAndCompilesTheCommonRoceRecipe) {
  absl::StatusOr<weft::v1::Policy> policy = LoadPolicyFile(kExample);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const weft::v1::NodeQos qos = CompileNodeQos(policy->qos());
  EXPECT_EQ(qos.trust(), weft::v1::TRUST_MODE_DSCP);
  EXPECT_EQ(qos.dscp_to_priority().at(26), 3u);
  EXPECT_EQ(qos.dscp_to_priority().at(24), 3u);
  EXPECT_EQ(qos.dscp_to_priority().at(16), 2u);
  EXPECT_EQ(qos.dscp_to_priority().at(48), 6u);
  EXPECT_THAT(qos.pfc_priorities(), ElementsAre(3));
  EXPECT_THAT(qos.priority_to_tc(), ElementsAre(0, 0, 2, 3, 0, 0, 6, 0));
  EXPECT_THAT(qos.tc_bandwidth_percent(), ElementsAre(40, 0, 10, 50, 0, 0, 0, 0));
  EXPECT_EQ(qos.tc_tsa(6), weft::v1::TSA_STRICT);
  EXPECT_EQ(qos.tc_tsa(3), weft::v1::TSA_ETS);
  EXPECT_EQ(qos.default_roce_tos(), 106u);  // DSCP 26 << 2 | ECT(0)
}

TEST(PolicyTest, ExampleDefaultProfileIsTheFirmwareDefaults) {
  absl::StatusOr<weft::v1::Policy> policy = LoadPolicyFile(kExample);
  ASSERT_TRUE(policy.ok()) << policy.status();
  const weft::v1::DcqcnProfile* written = nullptr;
  for (const auto& p : policy->dcqcn().profiles()) {
    if (p.name() == "default") written = &p;
  }
  ASSERT_NE(written, nullptr);
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  // The CNP DSCP and priority come from the cnp class (48 and 6, the firmware's too).
  EXPECT_TRUE(differencer.Compare(CompileDcqcn(*policy, "default"), DefaultDcqcnParams()))
      << diff;
  EXPECT_FALSE(written->params().has_np_cnp_dscp());
}

TEST(PolicyTest, ExampleClassesAgreeWithTheQosClassesJobsAndPlacementUse) {
  absl::StatusOr<weft::v1::Policy> policy = LoadPolicyFile(kExample);
  ASSERT_TRUE(policy.ok()) << policy.status();
  for (const QosClass& placed : QosClasses()) {
    const weft::v1::QosClassPolicy* found = nullptr;
    for (const auto& c : policy->qos().classes()) {
      if (c.name() == placed.name) found = &c;
    }
    ASSERT_NE(found, nullptr) << "the policy has no class " << placed.name;
    EXPECT_EQ(found->dscp(), placed.dscp) << placed.name;
    // NCCL_IB_TC is the whole ToS byte the RoCE class's default_roce_tos also is.
    EXPECT_EQ(found->dscp() << 2 | 2, placed.traffic_class) << placed.name;
  }
  EXPECT_EQ(CompileNodeQos(policy->qos()).default_roce_tos(),
            FindQosClass("training")->traffic_class);
}

TEST(PolicyTest, ProfilesByRackPodAndNodeFirstMatchWins) {
  absl::StatusOr<weft::v1::Policy> policy = LoadPolicyFile(kExample);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(ProfileNameFor(*policy, Node("a", "rack-1")), "fast-recovery");
  EXPECT_EQ(ProfileNameFor(*policy, Node("b", "rack-9", "storage-pod")), "gentle");
  EXPECT_EQ(ProfileNameFor(*policy, Node("gpu-099", "rack-9")), "gentle");
  EXPECT_EQ(ProfileNameFor(*policy, Node("gpu-099", "rack-1")), "fast-recovery");
  EXPECT_EQ(ProfileNameFor(*policy, Node("c", "rack-2")), "default");

  const weft::v1::DesiredState fast = CompileDesiredState(*policy, Node("a", "rack-1"));
  EXPECT_EQ(fast.node_name(), "a");
  EXPECT_EQ(fast.dcqcn().rp_ai_rate(), 20u);
  EXPECT_EQ(fast.dcqcn().rp_time_reset(), 150u);
  EXPECT_EQ(fast.dcqcn().rp_gd(), 11u);  // not in the profile: firmware default
  EXPECT_EQ(fast.dcqcn().np_cnp_dscp(), 48u);
  EXPECT_EQ(fast.dcqcn().np_cnp_prio(), 6u);
  EXPECT_EQ(fast.qos().default_roce_tos(), 106u);
  weft::v1::DesiredState checked = fast;
  checked.set_version(1);
  EXPECT_TRUE(ValidateDesiredState(checked).empty());
}

TEST(PolicyTest, ProfileListReplacesTheDefaultEnabledPriorities) {
  absl::StatusOr<weft::v1::Policy> policy = ParsePolicy(
      absl::StrReplaceAll(kMinimal, {{"{rp_ai_rate: 2}", "{rp_enabled_priorities: [3]}"}}),
      "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_THAT(CompileDcqcn(*policy, "slow").rp_enabled_priorities(), ElementsAre(3));
  EXPECT_EQ(CompileDcqcn(*policy, "slow").np_enabled_priorities_size(), 8);
}

TEST(PolicyTest, RolloutDefaultsApplyWhereTheFileIsSilent) {
  absl::StatusOr<weft::v1::Policy> policy = ParsePolicy(kMinimal, "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->rollout().canary_per_rack(), 1u);
  EXPECT_EQ(policy->rollout().wave_size(), 10u);
  EXPECT_EQ(policy->rollout().kpis().sustain_s(), 10u);
}

TEST(PolicyTest, SyntaxAndRangeErrorsNameFileLineAndColumn) {
  absl::Status status = ParseWith("dscp: 48", "dscp: 64");
  EXPECT_THAT(status.message(), HasSubstr("p.yaml:5:"));
  EXPECT_THAT(status.message(), HasSubstr("'64'"));
  EXPECT_THAT(ParseWith("trust: dscp", "trust: dscpp").message(), HasSubstr("p.yaml:2:10"));
  EXPECT_THAT(ParseWith("tsa: strict", "tsx: strict").message(), HasSubstr("tsx"));
}

TEST(PolicyTest, EtsSharesMustSumTo100) {
  absl::Status status = ParseWith("bandwidth_percent: 50}\n    - {tc: 3",
                                  "bandwidth_percent: 40}\n    - {tc: 3");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("the ETS shares of tc 0,3 sum to 90"));
  EXPECT_THAT(status.message(), HasSubstr("accepted: ETS shares summing to 100"));
}

TEST(PolicyTest, CnpClassMustNotBeLossless) {
  absl::Status status = ParseWith("cnp: true", "cnp: true, lossless: true");
  EXPECT_THAT(status.message(), HasSubstr("(cnp).lossless: value 'true' on the CNP class"));
}

TEST(PolicyTest, RoceClassMustHavePfc) {
  absl::Status status = ParseWith("lossless: true, roce: true", "roce: true");
  EXPECT_THAT(status.message(),
              HasSubstr("(training).lossless: value 'false' on the RoCE class (priority 3"));
}

TEST(PolicyTest, EveryPriorityInExactlyOneTrafficClass) {
  EXPECT_THAT(ParseWith("[0, 1, 2, 4, 5, 7]", "[0, 1, 2, 4, 5]").message(),
              HasSubstr("priorities 7 are in no traffic class"));
  EXPECT_THAT(ParseWith("[0, 1, 2, 4, 5, 7]", "[0, 1, 2, 3, 4, 5, 7]").message(),
              HasSubstr("value '3' is also in tc 0"));
}

TEST(PolicyTest, DcqcnParameterOutOfItsRealRangeNamesTheRange) {
  absl::Status status = ParseWith("{rp_ai_rate: 2}", "{rp_gd: 16}");
  EXPECT_THAT(status.message(), HasSubstr("dcqcn.profiles (slow).params: rp_gd = 16"));
  EXPECT_THAT(status.message(), HasSubstr("0..15"));
}

TEST(PolicyTest, CnpParametersMustMatchTheCnpClass) {
  EXPECT_THAT(ParseWith("{rp_ai_rate: 2}", "{np_cnp_dscp: 40}").message(),
              HasSubstr("np_cnp_dscp: value '40' differs from the DSCP of the cnp class"));
}

TEST(PolicyTest, UnknownProfilesAreRefused) {
  EXPECT_THAT(ParseWith("{profile: slow", "{profile: slowly").message(),
              HasSubstr("dcqcn.assignments[0].profile: value 'slowly' is not a profile; "
                        "accepted: default, slow"));
  EXPECT_THAT(ParseWith("dcqcn:\n", "dcqcn:\n  default_profile: nope\n").message(),
              HasSubstr("dcqcn.default_profile: value 'nope'"));
}

TEST(PolicyTest, EveryProblemIsReportedAtOnce) {
  const std::string yaml = absl::StrReplaceAll(
      kMinimal, {{"cnp: true", "cnp: true, lossless: true"}, {"dscp: 48", "dscp: 26"}});
  absl::Status status = ParsePolicy(yaml, "p.yaml").status();
  EXPECT_THAT(status.message(), HasSubstr("is also the DSCP of class training"));
  EXPECT_THAT(status.message(), HasSubstr("on the CNP class"));
}

TEST(PolicyTest, FirmwareDefaultStateLeavesQosAlone) {
  const weft::v1::DesiredState state = FirmwareDefaultState("n1");
  EXPECT_EQ(state.node_name(), "n1");
  EXPECT_FALSE(state.has_qos());
  EXPECT_TRUE(MessageDifferencer::Equals(state.dcqcn(), DefaultDcqcnParams()));
}

}  // namespace
}  // namespace weft::policy
