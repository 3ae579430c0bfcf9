// TuneManager over a real RolloutManager (Inventory, DesiredStateManager, SQLite rollout
// store) with a FakeClock and fake agents that answer (or refuse) what they are sent; the
// searches run tuning/'s real Tune on one small scenario.
#include "controller/tuning/tune_manager.h"

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "common/testing/temp_dir.h"
#include "controller/inventory/controller_metrics.h"
#include "controller/inventory/inventory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "store/controller_store.h"
#include "store/sqlite_rollout_store.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;

// Firmware-default DCQCN (no params set) on a lossless RoCE class with CNPs on a strict
// one: a safe policy whose profile the tuner can improve on incast.
constexpr char kPolicy[] = R"(qos:
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
    - name: default
      params: {rp_ai_rate: AI_RATE}
rollout:
  canary_per_rack: 1
  bake_s: 10
  wave_size: 2
  wave_bake_s: 5
  ack_timeout_s: 5
  kpis: {sustain_s: 2}
)";

weft::v1::PolicyRequest Request(int ai_rate) {
  weft::v1::PolicyRequest request;
  std::string yaml = kPolicy;
  yaml.replace(yaml.find("AI_RATE"), 7, absl::StrCat(ai_rate));
  request.set_policy_yaml(yaml);
  request.set_source_name("policy.yaml");
  return request;
}

TuneManagerOptions SmallOptions() {
  TuneManagerOptions options;
  options.max_evaluations = 40;
  // The 8→1 incast, where the firmware defaults sit at the PFC threshold (tuning/'s own
  // TuneTest): a search of 40 finds a profile that avoids the pauses.
  options.evaluation.scenarios = {{.name = "incast 8→1", .kind = tuning::ScenarioKind::kIncast,
                                   .incast_senders = 8}};
  options.evaluation.seeds = {1, 2};
  return options;
}

// Automatic proposals checked every second, on a 4→1 incast, a ring all-reduce and a
// MoE all-to-all (one seed, a short search: what matters here is when it starts and what
// it weighs).
TuneManagerOptions AutomaticOptions() {
  TuneManagerOptions options;
  options.max_evaluations = 3;
  options.evaluation.scenarios = {
      {.name = "incast 4→1", .kind = tuning::ScenarioKind::kIncast, .incast_senders = 4},
      {.name = "all-reduce", .kind = tuning::ScenarioKind::kAllReduce},
      {.name = "MoE all-to-all", .kind = tuning::ScenarioKind::kAllToAll}};
  options.evaluation.seeds = {1};
  options.check_interval = absl::Seconds(1);
  options.trigger = {.mix_shift_high = 0.2, .mix_shift_low = 0.1, .consecutive_checks = 3,
                     .kpi_regression = 0.1, .cooldown = absl::Seconds(10)};
  options.auto_propose = true;
  return options;
}

// A placed job's declared traffic, as the composition root reads it from a reservation.
tuning::JobTraffic Job(int ranks, uint64_t gradient_bytes, uint64_t alltoall_bytes) {
  weft::v1::PlacementRequest request;
  request.set_gradient_bytes(gradient_bytes);
  request.set_alltoall_bytes(alltoall_bytes);
  weft::v1::PlacementResponse reservation;
  for (int i = 0; i < ranks; ++i) reservation.add_ranks()->set_rank(i);
  return tuning::DeclaredTraffic(request, reservation);
}

double WeightOf(const weft::v1::TuneProposal& proposal, const std::string& scenario) {
  for (const weft::v1::TuneScenario& s : proposal.evidence()) {
    if (s.scenario() == scenario) return s.weight();
  }
  return -1;
}

weft::v1::ProposeRequest Seeded(uint64_t seed) {
  weft::v1::ProposeRequest request;
  request.set_seed(seed);
  return request;
}

class TuneManagerTest : public ::testing::Test {
 protected:
  TuneManagerTest()
      : controller_metrics_(registry_),
        inventory_(&clock_, InventoryOptions{}, &controller_metrics_),
        rollout_metrics_(registry_),
        desired_(&clock_, &rollout_metrics_,
                 [this](const std::string& node, weft::v1::ControllerMessage m) {
                   inbox_[node] = m.desired_state();
                   return absl::OkStatus();
                 }),
        tune_metrics_(registry_) {
    for (int r = 1; r <= 2; ++r) {
      for (int i = 1; i <= 2; ++i) {
        weft::v1::NodeInfo info;
        info.set_name(absl::StrCat("n", r, i));
        info.set_rack(absl::StrCat("rack-", r));
        info.set_pod("pod-1");
        weft::v1::Nic* nic = info.add_nics();
        nic->set_device("mlx5_0");
        nic->set_port(1);
        EXPECT_TRUE(inventory_.Register(info, 0).ok());
      }
    }
    database_ = *store::ControllerStore::Open(dir_);
    store_ = std::make_unique<store::SqliteRolloutStore>(database_.get());
    rollouts_ = std::make_unique<RolloutManager>(&inventory_, &desired_, store_.get(),
                                                 &rollout_metrics_, &clock_);
    EXPECT_TRUE(rollouts_->Recover().ok());
    tuner_ = std::make_unique<TuneManager>(rollouts_.get(), &tune_metrics_, &clock_,
                                           SmallOptions());
  }

  // One second passes; agents answer (NACK when refusing); both managers tick.
  void Step() {
    clock_.Advance(absl::Seconds(1));
    std::map<std::string, weft::v1::DesiredState> pending;
    pending.swap(inbox_);
    for (const auto& [node, state] : pending) {
      weft::v1::DesiredStateAck ack;
      ack.set_version(state.version());
      ack.set_nonce(state.nonce());
      ack.set_accepted(!refuse_);
      desired_.OnDesiredStateAck(node, ack);
    }
    rollouts_->Tick();
    tuner_->Tick();
  }

  bool RunRolloutUntil(weft::v1::RolloutPhase phase) {
    for (int i = 0; i < 200 && rollouts_->Get("")->phase() != phase; ++i) Step();
    return rollouts_->Get("")->phase() == phase;
  }

  void PutPolicyInForce(int ai_rate) {
    ASSERT_TRUE(rollouts_->Start(Request(ai_rate), "operator").ok());
    ASSERT_TRUE(RunRolloutUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  }

  weft::v1::TuneProposal ProposeAndWait(const weft::v1::ProposeRequest& request) {
    absl::StatusOr<weft::v1::TuneProposal> started = tuner_->Propose(request, "alice");
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return {};
    EXPECT_EQ(started->state(), weft::v1::TUNE_STATE_EVALUATING);
    tuner_->AwaitIdle();
    return *tuner_->Get(started->id());
  }

  const std::string dir_ = testing::MakeTempDir("tune");

  double Metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) {
    return MetricValue(registry_, name, labels).value_or(-1);
  }

  // The tuner for automatic proposals, reading `jobs_`.
  void UseAutomaticTuner(TuneManagerOptions options) {
    tuner_ = std::make_unique<TuneManager>(rollouts_.get(), &tune_metrics_, &clock_, options,
                                           [this] { return jobs_; });
  }

  RunningJobs jobs_;
  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics controller_metrics_;
  Inventory inventory_;
  RolloutMetrics rollout_metrics_;
  std::map<std::string, weft::v1::DesiredState> inbox_;
  bool refuse_ = false;
  DesiredStateManager desired_;
  TuneMetrics tune_metrics_;
  std::unique_ptr<store::ControllerStore> database_;
  std::unique_ptr<store::SqliteRolloutStore> store_;
  std::unique_ptr<RolloutManager> rollouts_;
  std::unique_ptr<TuneManager> tuner_;
};

TEST_F(TuneManagerTest, NothingToTuneBeforeAPolicyIsInForce) {
  absl::StatusOr<weft::v1::TuneProposal> refused = tuner_->Propose({}, "alice");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("weftctl rollout start"));
  EXPECT_TRUE(tuner_->List().proposals().empty());
  EXPECT_EQ(tuner_->Get("").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TuneManagerTest, BadRequestsAreRefusedWithTheLimit) {
  PutPolicyInForce(5);
  weft::v1::ProposeRequest request;
  request.set_max_evaluations(1000);
  absl::StatusOr<weft::v1::TuneProposal> refused = tuner_->Propose(request, "alice");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("limit of 40"));
  request.set_max_evaluations(0);
  request.mutable_scope()->add_racks("");
  EXPECT_EQ(tuner_->Propose(request, "alice").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tuner_->List().proposals().empty());
}

TEST_F(TuneManagerTest, ASearchKeepsItsEvidenceAndIsReproducibleForASeed) {
  PutPolicyInForce(5);
  weft::v1::ProposeRequest request;
  request.set_seed(7);
  request.set_dry_run(true);
  const weft::v1::TuneProposal first = ProposeAndWait(request);
  ASSERT_NE(first.state(), weft::v1::TUNE_STATE_FAILED) << first.reason();
  EXPECT_EQ(first.id(), "tune-1");
  EXPECT_EQ(first.requested_by(), "alice");
  EXPECT_EQ(first.evaluations(), 40u);
  ASSERT_EQ(first.evidence_size(), 1);
  EXPECT_EQ(first.evidence(0).scenario(), "incast 8→1");
  EXPECT_FALSE(first.evidence(0).metrics().empty());
  EXPECT_EQ(first.baseline().rp_ai_rate(), 5u);  // the profile in force
  // A dry run never becomes applicable, whatever it found.
  EXPECT_NE(first.state(), weft::v1::TUNE_STATE_PROPOSED);
  EXPECT_EQ(tuner_->Apply(first.id(), "alice").status().code(),
            absl::StatusCode::kFailedPrecondition);

  const weft::v1::TuneProposal second = ProposeAndWait(request);
  EXPECT_EQ(second.id(), "tune-2");
  EXPECT_EQ(second.score(), first.score());
  EXPECT_EQ(second.profile().SerializeAsString(), first.profile().SerializeAsString());
  EXPECT_EQ(tuner_->List().proposals_size(), 2);

  const std::string result = first.state() == weft::v1::TUNE_STATE_DRY_RUN ? "dry_run"
                                                                          : "no_better";
  EXPECT_EQ(Metric("weft_controller_tune_proposals_total", {{"result", result}}), 2);
  EXPECT_EQ(Metric("weft_controller_tune_evaluations_total"), 80);
  EXPECT_EQ(Metric("weft_controller_tune_searching"), 0);
}

TEST_F(TuneManagerTest, AnAppliedProposalRollsOutAndBecomesThePolicyInForce) {
  PutPolicyInForce(5);
  const weft::v1::TuneProposal proposed = ProposeAndWait(Seeded(3));
  ASSERT_EQ(proposed.state(), weft::v1::TUNE_STATE_PROPOSED) << proposed.reason();
  EXPECT_GT(proposed.score(), 0);
  absl::StatusOr<weft::v1::TuneProposal> applied = tuner_->Apply(proposed.id(), "bob");
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->state(), weft::v1::TUNE_STATE_ROLLING_OUT);
  EXPECT_EQ(applied->applied_by(), "bob");
  EXPECT_EQ(rollouts_->Get("")->id(), applied->rollout_id());
  EXPECT_EQ(rollouts_->Get("")->source(), proposed.id());
  // Applying twice is refused, naming the state.
  EXPECT_THAT(std::string(tuner_->Apply(proposed.id(), "bob").status().message()),
              HasSubstr("TUNE_STATE_ROLLING_OUT"));

  ASSERT_TRUE(RunRolloutUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  EXPECT_EQ(tuner_->Get(proposed.id())->state(), weft::v1::TUNE_STATE_COMPLETED);
  EXPECT_EQ(Metric("weft_controller_tune_rollouts_total", {{"result", "completed"}}), 1);
  absl::StatusOr<weft::v1::Policy> in_force = rollouts_->PolicyInForce();
  ASSERT_TRUE(in_force.ok());
  bool found = false;
  for (const weft::v1::DcqcnProfile& profile : in_force->dcqcn().profiles()) {
    if (profile.name() == proposed.profile_name()) found = true;
  }
  EXPECT_TRUE(found) << "the proposal's profile is not in the policy in force";
}

TEST_F(TuneManagerTest, ARolledBackProposalTeachesTheModelsErrorAndAStaleOneIsSuperseded) {
  PutPolicyInForce(5);
  const weft::v1::TuneProposal proposed = ProposeAndWait(Seeded(3));
  ASSERT_EQ(proposed.state(), weft::v1::TUNE_STATE_PROPOSED) << proposed.reason();
  ASSERT_TRUE(tuner_->Apply(proposed.id(), "bob").ok());
  refuse_ = true;  // the live fabric refuses it: the rollout rolls back
  ASSERT_TRUE(RunRolloutUntil(weft::v1::ROLLOUT_PHASE_ROLLED_BACK));
  const weft::v1::TuneProposal rolled_back = *tuner_->Get(proposed.id());
  EXPECT_EQ(rolled_back.state(), weft::v1::TUNE_STATE_ROLLED_BACK);
  EXPECT_FALSE(rolled_back.reason().empty());
  EXPECT_EQ(rolled_back.model_error(), proposed.score());
  EXPECT_EQ(Metric("weft_controller_tune_rollouts_total", {{"result", "rolled_back"}}), 1);

  // The same search again scores the same: within the model's error, so no proposal.
  refuse_ = false;
  const weft::v1::TuneProposal again = ProposeAndWait(Seeded(3));
  EXPECT_EQ(again.state(), weft::v1::TUNE_STATE_NO_BETTER);
  EXPECT_THAT(again.reason(), HasSubstr("model's error"));

  // Another scope has no such history; once another policy is in force, its proposal is
  // stale.
  weft::v1::ProposeRequest rack = Seeded(3);
  rack.mutable_scope()->add_racks("rack-1");
  const weft::v1::TuneProposal for_rack = ProposeAndWait(rack);
  ASSERT_EQ(for_rack.state(), weft::v1::TUNE_STATE_PROPOSED) << for_rack.reason();
  PutPolicyInForce(10);
  EXPECT_EQ(tuner_->Get(for_rack.id())->state(), weft::v1::TUNE_STATE_SUPERSEDED);
}

TEST_F(TuneManagerTest, AnAllToAllHeavyJobMakesTheTunerProposeOnceWeighingAllToAll) {
  UseAutomaticTuner(AutomaticOptions());
  PutPolicyInForce(5);
  // No declared traffic: nothing to tune for.
  for (int i = 0; i < 5; ++i) Step();
  EXPECT_TRUE(tuner_->List().proposals().empty());

  // A MoE job starts: 64 ranks, 1 GB of all-to-all and 100 MB of gradients per rank.
  jobs_.traffic = {Job(64, 100'000'000, 1'000'000'000)};
  Step();
  Step();
  EXPECT_TRUE(tuner_->List().proposals().empty()) << "fired before 3 checks in a row";
  Step();
  ASSERT_EQ(tuner_->List().proposals_size(), 1);
  tuner_->AwaitIdle();
  const weft::v1::TuneProposal proposal = *tuner_->Get("");
  EXPECT_EQ(proposal.trigger(), weft::v1::TUNE_TRIGGER_MIX_SHIFT);
  EXPECT_EQ(proposal.requested_by(), "tuner");
  EXPECT_EQ(ScopeKey(proposal.scope()), "cluster");
  EXPECT_THAT(proposal.trigger_detail(), HasSubstr("diverged 1.00 > 0.20 on 3 checks"));
  EXPECT_EQ(proposal.traffic_mix(), "all_to_all 83%, all_reduce 17%");
  ASSERT_NE(proposal.state(), weft::v1::TUNE_STATE_FAILED) << proposal.reason();
  // The search weighed the all-to-all most, the all-reduce next, incast at the floor.
  const double all_to_all = WeightOf(proposal, "MoE all-to-all");
  const double all_reduce = WeightOf(proposal, "all-reduce");
  const double incast = WeightOf(proposal, "incast 4→1");
  EXPECT_GT(all_to_all, 2 * all_reduce);
  EXPECT_GT(all_reduce, incast);
  EXPECT_GT(incast, 0);
  EXPECT_NEAR(all_to_all + all_reduce + incast, 3, 1e-9);
  EXPECT_EQ(Metric("weft_controller_tune_triggers_total", {{"reason", "mix_shift"}}), 1);
  EXPECT_EQ(Metric("weft_controller_tune_mix_divergence"), 1);

  // While the mix stays (past the 10 s cooldown): no second proposal.
  for (int i = 0; i < 30; ++i) Step();
  EXPECT_EQ(tuner_->List().proposals_size(), 1);
  EXPECT_EQ(Metric("weft_controller_tune_triggers_total", {{"reason", "mix_shift"}}), 1);

  // The job slows down a quarter against its first iteration: a KPI regression.
  jobs_.kpis = {{.iteration_s = 1.25, .baseline_s = 1.0}};
  for (int i = 0; i < 3; ++i) Step();
  ASSERT_EQ(tuner_->List().proposals_size(), 2);
  tuner_->AwaitIdle();
  EXPECT_EQ(tuner_->Get("")->trigger(), weft::v1::TUNE_TRIGGER_KPI_REGRESSION);
  EXPECT_THAT(tuner_->Get("")->trigger_detail(), HasSubstr("25.0 % above its baseline"));
  EXPECT_EQ(Metric("weft_controller_tune_triggers_total", {{"reason", "kpi_regression"}}), 1);
}

TEST_F(TuneManagerTest, TriggersAreCountedButProposeNothingWhenAutomaticProposalsAreOff) {
  TuneManagerOptions options = AutomaticOptions();
  options.auto_propose = false;
  UseAutomaticTuner(options);
  PutPolicyInForce(5);
  jobs_.traffic = {Job(16, 0, 1'000'000)};
  for (int i = 0; i < 20; ++i) Step();
  EXPECT_TRUE(tuner_->List().proposals().empty());
  EXPECT_EQ(Metric("weft_controller_tune_triggers_total", {{"reason", "mix_shift"}}), 1);
}

TEST_F(TuneManagerTest, AutomaticApplyRollsATriggeredProposalOutThroughTheOrdinaryRollout) {
  TuneManagerOptions options = SmallOptions();  // a search that finds a better profile
  options.check_interval = absl::Seconds(1);
  options.trigger.consecutive_checks = 1;
  options.auto_propose = true;
  options.auto_apply = true;
  UseAutomaticTuner(options);
  PutPolicyInForce(5);
  jobs_.traffic = {Job(8, 1'000'000, 0)};
  Step();
  ASSERT_EQ(tuner_->List().proposals_size(), 1);
  tuner_->AwaitIdle();
  ASSERT_EQ(tuner_->Get("")->state(), weft::v1::TUNE_STATE_PROPOSED) << tuner_->Get("")->reason();
  Step();
  const weft::v1::TuneProposal applied = *tuner_->Get("");
  EXPECT_EQ(applied.state(), weft::v1::TUNE_STATE_ROLLING_OUT);
  EXPECT_EQ(applied.applied_by(), "tuner");
  EXPECT_EQ(rollouts_->Get("")->source(), applied.id());
  ASSERT_TRUE(RunRolloutUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  EXPECT_EQ(tuner_->Get(applied.id())->state(), weft::v1::TUNE_STATE_COMPLETED);
  // Its mix is now the reference: the same jobs fire nothing more.
  for (int i = 0; i < 10; ++i) Step();
  EXPECT_EQ(tuner_->List().proposals_size(), 1);
  EXPECT_EQ(Metric("weft_controller_tune_mix_divergence"), 0);
}

TEST_F(TuneManagerTest, AnOperatorsProposalIsWeighedByTheMixAndSaysSo) {
  UseAutomaticTuner(AutomaticOptions());
  PutPolicyInForce(5);
  jobs_.traffic = {Job(8, 1'000'000, 0)};
  const weft::v1::TuneProposal proposal = ProposeAndWait(Seeded(1));
  EXPECT_EQ(proposal.trigger(), weft::v1::TUNE_TRIGGER_ON_REQUEST);
  EXPECT_EQ(proposal.traffic_mix(), "all_reduce 100%");
  EXPECT_GT(WeightOf(proposal, "all-reduce"), WeightOf(proposal, "MoE all-to-all"));
}

}  // namespace
}  // namespace weft::controller
