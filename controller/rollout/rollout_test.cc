#include "controller/rollout/rollout.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "policy/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::controller {

using policy::DefaultPolicy;
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using weft::v1::Rollout;

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

// 3 racks x 3 nodes (n-r1-1 ...), all reporting 8 NICs with quiet rates.
std::vector<FleetNode> Fleet() {
  std::vector<FleetNode> fleet;
  for (int r = 1; r <= 3; ++r) {
    for (int i = 1; i <= 3; ++i) {
      FleetNode n;
      n.name = absl::StrCat("n-r", r, "-", i);
      n.rack = absl::StrCat("r", r);
      n.pod = "p1";
      n.reporting = true;
      n.nics = 8;
      n.rates.set_tx_gbps(100);
      n.rates.set_pfc_rx_pause_share(0.001);  // most-paused NIC: 0.1% of the time
      n.rates.set_ecn_marked_per_s(100);
      n.rates.set_cnp_handled_per_s(100);
      fleet.push_back(n);
    }
  }
  return fleet;
}

weft::v1::Policy TestPolicy() {
  weft::v1::Policy policy = DefaultPolicy();
  weft::v1::RolloutPolicy* r = policy.mutable_rollout();
  r->set_canary_per_rack(1);
  r->set_bake_s(60);
  r->set_wave_size(4);
  r->set_wave_bake_s(30);
  r->set_ack_timeout_s(20);
  r->set_max_nack_share(0);
  r->mutable_kpis()->set_sustain_s(10);
  return policy;
}

FleetNode& Find(std::vector<FleetNode>& fleet, const std::string& name) {
  for (FleetNode& n : fleet) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return fleet[0];
}

void Apply(std::vector<FleetNode>& fleet, const std::vector<std::string>& nodes,
           uint64_t version) {
  for (const std::string& n : nodes) Find(fleet, n).applied_version = version;
}

class RolloutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_ = Fleet();
    absl::StatusOr<Rollout> planned =
        PlanRollout("r1", TestPolicy(), 5, nullptr, 0, fleet_, now_, "test");
    ASSERT_TRUE(planned.ok()) << planned.status();
    rollout_ = *planned;
  }

  RolloutActions Advance(absl::Duration by = absl::ZeroDuration()) {
    now_ += by;
    return AdvanceRollout(rollout_, fleet_, now_);
  }

  std::vector<std::string> StepNodes(int i) {
    return {rollout_.steps(i).nodes().begin(), rollout_.steps(i).nodes().end()};
  }

  absl::Time now_ = kStart;
  std::vector<FleetNode> fleet_;
  Rollout rollout_;
};

TEST_F(RolloutTest, PlanPutsOneCanaryPerRackThenWavesRackByRack) {
  ASSERT_EQ(rollout_.steps_size(), 3);
  EXPECT_THAT(StepNodes(0), ElementsAre("n-r1-1", "n-r2-1", "n-r3-1"));
  EXPECT_THAT(StepNodes(1), ElementsAre("n-r1-2", "n-r1-3", "n-r2-2", "n-r2-3"));
  EXPECT_THAT(StepNodes(2), ElementsAre("n-r3-2", "n-r3-3"));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_CANARY);
  EXPECT_EQ(rollout_.rollback_version(), 6u);
  EXPECT_EQ(rollout_.baseline().nodes(), 9u);
  EXPECT_DOUBLE_EQ(rollout_.baseline().tx_gbps(), 100);
}

TEST_F(RolloutTest, CanaryShareTakesRacksInTurn) {
  weft::v1::Policy policy = TestPolicy();
  policy.mutable_rollout()->set_canary_per_rack(0);
  policy.mutable_rollout()->set_canary_share(0.4);  // ceil(3.6) = 4 nodes
  absl::StatusOr<Rollout> planned = PlanRollout("r", policy, 1, nullptr, 0, fleet_, now_, "");
  ASSERT_TRUE(planned.ok());
  EXPECT_THAT(std::vector<std::string>(planned->steps(0).nodes().begin(),
                                       planned->steps(0).nodes().end()),
              ElementsAre("n-r1-1", "n-r1-2", "n-r2-1", "n-r3-1"));
}

TEST_F(RolloutTest, EmptyFleetIsRefused) {
  EXPECT_EQ(PlanRollout("r", TestPolicy(), 1, nullptr, 0, {}, now_, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(RolloutTest, CompletesThroughCanaryBakeAndWaves) {
  RolloutActions a = Advance();
  EXPECT_THAT(a.push_new, ElementsAre("n-r1-1", "n-r2-1", "n-r3-1"));
  EXPECT_TRUE(a.changed);
  // Not all answered yet.
  Apply(fleet_, {"n-r1-1", "n-r2-1"}, 5);
  a = Advance(absl::Seconds(1));
  EXPECT_TRUE(a.push_new.empty());
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_CANARY);
  EXPECT_EQ(rollout_.steps(0).acked(), 2u);
  Apply(fleet_, {"n-r3-1"}, 5);
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  // The bake lasts bake_s.
  a = Advance(absl::Seconds(59));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  EXPECT_EQ(rollout_.last_judgement().changed_nodes(), 3u);
  EXPECT_EQ(rollout_.last_judgement().control_nodes(), 6u);
  EXPECT_EQ(rollout_.last_judgement().control(), "unchanged nodes");
  a = Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_WAVE);
  EXPECT_EQ(rollout_.current_step(), 1u);
  EXPECT_THAT(a.push_new, ElementsAre("n-r1-2", "n-r1-3", "n-r2-2", "n-r2-3"));
  Apply(fleet_, StepNodes(1), 5);
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  a = Advance(absl::Seconds(30));
  EXPECT_EQ(rollout_.current_step(), 2u);
  EXPECT_THAT(a.push_new, ElementsAre("n-r3-2", "n-r3-3"));
  Apply(fleet_, StepNodes(2), 5);
  Advance(absl::Seconds(1));
  Advance(absl::Seconds(10));
  // Every node changed: the control is the cluster before the rollout.
  EXPECT_EQ(rollout_.last_judgement().control(), "cluster before the rollout");
  a = Advance(absl::Seconds(20));
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_COMPLETED);
  EXPECT_GT(rollout_.finished_us(), 0);
}

TEST_F(RolloutTest, CanaryNackRollsBackEverySentNode) {
  Advance();
  Apply(fleet_, {"n-r1-1", "n-r2-1"}, 5);
  Find(fleet_, "n-r3-1").nacked_version = 5;
  RolloutActions a = Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_ROLLING_BACK);
  EXPECT_THAT(a.push_rollback, ElementsAre("n-r1-1", "n-r2-1", "n-r3-1"));
  EXPECT_THAT(rollout_.reason(), HasSubstr("canary: 1 of 3 nodes NACKed"));
  // Done once each answered the rollback version.
  Apply(fleet_, {"n-r1-1", "n-r2-1"}, 6);
  a = Advance(absl::Seconds(1));
  EXPECT_FALSE(a.finished);
  Find(fleet_, "n-r3-1").applied_version = 6;
  a = Advance(absl::Seconds(1));
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_ROLLED_BACK);
}

TEST_F(RolloutTest, NackShareWithinTheLimitKeepsGoing) {
  rollout_.mutable_policy()->mutable_rollout()->set_max_nack_share(0.34);
  Advance();
  Apply(fleet_, {"n-r1-1", "n-r2-1"}, 5);
  Find(fleet_, "n-r3-1").nacked_version = 5;
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
}

TEST_F(RolloutTest, NodeThatNeverAnswersCountsAsANackAfterTheTimeout) {
  Advance();
  Apply(fleet_, {"n-r1-1", "n-r2-1"}, 5);
  Advance(absl::Seconds(19));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_CANARY);
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_ROLLING_BACK);
  EXPECT_THAT(rollout_.reason(), HasSubstr("1 did not answer within 20 s"));
  // A node that never answers the rollback either: ROLLED_BACK after the timeout.
  Apply(fleet_, {"n-r1-1", "n-r2-1"}, 6);
  EXPECT_FALSE(Advance(absl::Seconds(5)).finished);
  EXPECT_TRUE(Advance(absl::Seconds(15)).finished);
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_ROLLED_BACK);
}

TEST_F(RolloutTest, SustainedPfcRegressionOnTheCanaryRollsBack) {
  Advance();
  Apply(fleet_, StepNodes(0), 5);
  Advance(absl::Seconds(1));
  ASSERT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  // A NIC of one canary node is paused a quarter of the time: +24.9 points on that node,
  // +8.3 over the canary group, past the 5-point threshold.
  Find(fleet_, "n-r2-1").rates.set_pfc_rx_pause_share(0.25);
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  EXPECT_NE(rollout_.regression_since_us(), 0);
  const weft::v1::KpiValue& pfc = rollout_.last_judgement().kpis(0);
  EXPECT_EQ(pfc.name(), "pfc_pause_share");
  EXPECT_TRUE(pfc.regressed());
  EXPECT_NEAR(pfc.changed(), (0.25 + 0.001 * 2) / 3, 1e-9);
  EXPECT_NEAR(pfc.control(), 0.001, 1e-9);
  Advance(absl::Seconds(5));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  RolloutActions a = Advance(absl::Seconds(5));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_ROLLING_BACK);
  EXPECT_EQ(a.push_rollback.size(), 3u);
  EXPECT_THAT(rollout_.reason(), HasSubstr("KPI regression for 10 s: pfc_pause_share"));
}

TEST_F(RolloutTest, ShortRegressionDoesNotRollBackButHoldsTheBake) {
  Advance();
  Apply(fleet_, StepNodes(0), 5);
  Advance(absl::Seconds(1));
  Find(fleet_, "n-r1-1").rates.set_retransmissions_per_s(1000);
  Advance(absl::Seconds(55));
  EXPECT_NE(rollout_.regression_since_us(), 0);
  Find(fleet_, "n-r1-1").rates.set_retransmissions_per_s(0);
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.regression_since_us(), 0);
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  // Advance only in steps shorter than sustain_s: a regression of 5 s never counts.
  Advance(absl::Seconds(4));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_WAVE);
}

TEST_F(RolloutTest, ThroughputDropAndCnpIncreaseAreRegressions) {
  Advance();
  Apply(fleet_, StepNodes(0), 5);
  Advance(absl::Seconds(1));
  for (const std::string& n : StepNodes(0)) {
    Find(fleet_, n).rates.set_tx_gbps(70);
    Find(fleet_, n).rates.set_cnp_handled_per_s(5000);
  }
  Advance(absl::Seconds(1));
  std::vector<std::string> regressed;
  for (const auto& kpi : rollout_.last_judgement().kpis()) {
    if (kpi.regressed()) regressed.push_back(kpi.name());
  }
  EXPECT_THAT(regressed, ElementsAre("cnps_per_s", "tx_gbps"));
}

TEST_F(RolloutTest, PauseStopsEverythingAndResumeRestartsTheBake) {
  Advance();
  Apply(fleet_, StepNodes(0), 5);
  Advance(absl::Seconds(1));
  ASSERT_TRUE(PauseRollout(rollout_, now_).ok());
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_PAUSED);
  EXPECT_EQ(PauseRollout(rollout_, now_).code(), absl::StatusCode::kFailedPrecondition);
  Find(fleet_, "n-r1-1").rates.set_pfc_tx_pause_share(1.0);  // not judged while paused
  RolloutActions a = Advance(absl::Seconds(600));
  EXPECT_FALSE(a.changed);
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_PAUSED);
  Find(fleet_, "n-r1-1").rates.set_pfc_tx_pause_share(0);
  ASSERT_TRUE(ResumeRollout(rollout_, now_).ok());
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  Advance(absl::Seconds(30));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  Advance(absl::Seconds(30));
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_WAVE);
  EXPECT_EQ(ResumeRollout(rollout_, now_).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(RolloutTest, AbortRollsBackAndEndsAborted) {
  Advance();
  Apply(fleet_, StepNodes(0), 5);
  Advance(absl::Seconds(1));
  absl::StatusOr<RolloutActions> a = AbortRollout(rollout_, "wrong file", now_);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->push_rollback.size(), 3u);
  EXPECT_THAT(rollout_.reason(), HasSubstr("aborted by hand: wrong file"));
  Apply(fleet_, StepNodes(0), 6);
  EXPECT_TRUE(Advance(absl::Seconds(1)).finished);
  EXPECT_EQ(rollout_.phase(), weft::v1::ROLLOUT_PHASE_ABORTED);
  EXPECT_EQ(AbortRollout(rollout_, "", now_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_GE(rollout_.history_size(), 4);
}

TEST_F(RolloutTest, NonReportingNodesAreNotJudged) {
  Advance();
  Apply(fleet_, StepNodes(0), 5);
  Advance(absl::Seconds(1));
  FleetNode& silent = Find(fleet_, "n-r1-1");
  silent.reporting = false;
  silent.rates.set_pfc_tx_pause_share(1.0);
  Advance(absl::Seconds(1));
  EXPECT_EQ(rollout_.last_judgement().changed_nodes(), 2u);
  EXPECT_EQ(rollout_.regression_since_us(), 0);
}

}  // namespace
}  // namespace weft::controller
