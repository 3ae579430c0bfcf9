// weftctl tune: the scope's syntax and what a person reads of a proposal and the history.
#include "cli/tune_command.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(TuneCommandTest, ScopeEntriesAreRacksUnlessTheySayPodOrNode) {
  absl::StatusOr<weft::v1::TuneScope> scope =
      ParseTuneScope({"rack-a", "rack:rack-b", "pod:pod-1", "node:gpu-a01"});
  ASSERT_TRUE(scope.ok()) << scope.status();
  EXPECT_THAT(scope->racks(), ::testing::ElementsAre("rack-a", "rack-b"));
  EXPECT_THAT(scope->pods(), ::testing::ElementsAre("pod-1"));
  EXPECT_THAT(scope->nodes(), ::testing::ElementsAre("gpu-a01"));
  EXPECT_TRUE(ParseTuneScope({})->racks().empty());
  absl::StatusOr<weft::v1::TuneScope> bad = ParseTuneScope({"switch:tor-a"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'switch:tor-a'"));
  EXPECT_FALSE(ParseTuneScope({"pod:"}).ok());
}

weft::v1::TuneProposal Proposed() {
  weft::v1::TuneProposal p;
  p.set_id("tune-3");
  p.set_state(weft::v1::TUNE_STATE_PROPOSED);
  p.mutable_scope()->add_racks("rack-a");
  p.set_seed(7);
  p.set_evaluations(40);
  p.set_max_evaluations(40);
  p.set_wall_ms(12300);
  p.set_score(0.21);
  p.set_requested_by("alice");
  p.mutable_baseline()->set_rp_ai_rate(5);
  p.mutable_baseline()->set_rp_min_dec_fac(50);
  p.mutable_profile()->set_rp_ai_rate(20);
  p.mutable_profile()->set_rp_min_dec_fac(50);
  p.mutable_profile()->set_rp_hai_rate(100);
  weft::v1::TuneScenario* s = p.add_evidence();
  s->set_scenario("all-reduce");
  s->set_seeds(3);
  weft::v1::TuneMetric* m = s->add_metrics();
  m->set_metric("busbw (GB/s)");
  m->set_higher_is_better(true);
  m->set_baseline_mean(40);
  m->set_candidate_mean(50);
  p.add_not_modelled("rp_dce_tcp_rtt");
  return p;
}

TEST(TuneCommandTest, AProposalShowsWhatItChangesItsEvidenceAndTheNextStep) {
  const std::string text = FormatTuneProposal(Proposed());
  EXPECT_THAT(text, HasSubstr("proposal tune-3  PROPOSED  scope rack-a"));
  EXPECT_THAT(text, HasSubstr("seed 7, 40 of 40 evaluations in 12.3 s"));
  EXPECT_THAT(text, HasSubstr("score 0.21 (better than the profile in force)"));
  // Changed parameters only: rp_min_dec_fac is the same on both sides.
  EXPECT_THAT(text, HasSubstr("rp_ai_rate"));
  EXPECT_THAT(text, HasSubstr("rp_hai_rate"));
  EXPECT_THAT(text, Not(HasSubstr("rp_min_dec_fac")));
  EXPECT_THAT(text, HasSubstr("+25.0%"));
  EXPECT_THAT(text, HasSubstr("not modelled (left as they are): rp_dce_tcp_rtt"));
  EXPECT_THAT(text, HasSubstr("weftctl tune apply tune-3"));
  EXPECT_THAT(text, HasSubstr("trigger: request\n"));
}

TEST(TuneCommandTest, ATriggeredProposalSaysWhatFiredItAndTheMixItWeighed) {
  weft::v1::TuneProposal p = Proposed();
  p.set_trigger(weft::v1::TUNE_TRIGGER_MIX_SHIFT);
  p.set_trigger_detail("traffic mix diverged 0.80 > 0.20 on 3 checks in a row");
  p.set_traffic_mix("all_to_all 80%, all_reduce 20%");
  p.mutable_evidence(0)->set_weight(0.75);
  const std::string text = FormatTuneProposal(p);
  EXPECT_THAT(text, HasSubstr("trigger: mix shift (traffic mix diverged 0.80 > 0.20"));
  EXPECT_THAT(text, HasSubstr("traffic mix: all_to_all 80%, all_reduce 20%; scenario weights: "
                              "all-reduce 0.75"));
  weft::v1::ListProposalsResponse list;
  *list.add_proposals() = p;
  EXPECT_THAT(FormatTuneHistory(list), HasSubstr("mix shift"));
}

TEST(TuneCommandTest, ARolledBackProposalSaysWhyAndWhereItsRolloutIs) {
  weft::v1::TuneProposal p = Proposed();
  p.set_state(weft::v1::TUNE_STATE_ROLLED_BACK);
  p.set_rollout_id("rollout-9");
  p.set_applied_by("bob");
  p.set_reason("pfc_pause_share regressed");
  p.set_model_error(0.21);
  const std::string text = FormatTuneProposal(p);
  EXPECT_THAT(text, HasSubstr("ROLLED_BACK"));
  EXPECT_THAT(text, HasSubstr("reason: pfc_pause_share regressed"));
  EXPECT_THAT(text, HasSubstr("weftctl rollout status rollout-9"));
  EXPECT_THAT(text, HasSubstr("model error recorded for this scope: 0.21"));
  EXPECT_THAT(text, Not(HasSubstr("weftctl tune apply")));
}

TEST(TuneCommandTest, HistoryHasARowPerProposal) {
  weft::v1::ListProposalsResponse list;
  EXPECT_EQ(FormatTuneHistory(list), "no proposals\n");
  *list.add_proposals() = Proposed();
  weft::v1::TuneProposal evaluating;
  evaluating.set_id("tune-4");
  evaluating.set_state(weft::v1::TUNE_STATE_EVALUATING);
  *list.add_proposals() = evaluating;
  const std::string text = FormatTuneHistory(list);
  EXPECT_THAT(text, HasSubstr("tune-3"));
  EXPECT_THAT(text, HasSubstr("PROPOSED"));
  EXPECT_THAT(text, HasSubstr("tune-4"));
  EXPECT_THAT(text, HasSubstr("EVALUATING"));
  EXPECT_THAT(text, HasSubstr("cluster"));
  EXPECT_THAT(text, HasSubstr("TRIGGER"));
  EXPECT_THAT(text, HasSubstr("request"));
}

}  // namespace
}  // namespace weft
