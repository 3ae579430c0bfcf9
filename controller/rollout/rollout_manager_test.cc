// RolloutManager over a real Inventory, DesiredStateManager and SqliteRolloutStore, with
// a FakeClock and a fake agent side that answers the desired states it is sent.
#include "controller/rollout/rollout_manager.h"

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/fake_clock.h"
#include "controller/inventory/controller_metrics.h"
#include "common/testing/metrics.h"
#include "common/testing/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "store/controller_store.h"
#include "store/sqlite_rollout_store.h"

namespace weft::controller {
namespace {

using ::testing::HasSubstr;

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
  request.set_policy_yaml(absl::StrReplaceAll(kPolicy, {{"AI_RATE", absl::StrCat(ai_rate)}}));
  request.set_source_name("policy.yaml");
  return request;
}

// The agents: every connected node gets what it is sent; `refuse` NACKs.
struct FakeAgents {
  std::map<std::string, weft::v1::DesiredState> inbox;  // newest per node
  std::set<std::string> refuse;
  DesiredStateManager* desired = nullptr;

  void AnswerAll() {
    std::map<std::string, weft::v1::DesiredState> pending;
    pending.swap(inbox);
    for (const auto& [node, state] : pending) {
      weft::v1::DesiredStateAck ack;
      ack.set_version(state.version());
      ack.set_nonce(state.nonce());
      ack.set_accepted(!refuse.count(node));
      desired->OnDesiredStateAck(node, ack);
    }
  }
};

// One controller's worth of the pieces, over `dir`.
struct Controller {
  Controller(const Clock* clock, const std::string& dir, Inventory* inventory,
             FakeAgents* agents)
      : rollout_metrics(registry),
        desired(clock, &rollout_metrics,
                [agents](const std::string& node, weft::v1::ControllerMessage m) {
                  agents->inbox[node] = m.desired_state();
                  return absl::OkStatus();
                }) {
    database = *store::ControllerStore::Open(dir);
    store = std::make_unique<store::SqliteRolloutStore>(database.get());
    agents->desired = &desired;
    manager = std::make_unique<RolloutManager>(inventory, &desired, store.get(),
                                               &rollout_metrics, clock);
  }

  prometheus::Registry registry;
  RolloutMetrics rollout_metrics;
  DesiredStateManager desired;
  std::unique_ptr<store::ControllerStore> database;
  std::unique_ptr<store::SqliteRolloutStore> store;
  std::unique_ptr<RolloutManager> manager;
};

class RolloutManagerTest : public ::testing::Test {
 protected:
  RolloutManagerTest()
      : controller_metrics_(registry_), inventory_(&clock_, InventoryOptions{}, &controller_metrics_) {
    for (int r = 1; r <= 3; ++r) {
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
  }

  void StartController(const std::string& dir) {
    controller_.reset();  // a restart: the old one lets go of the database first
    controller_ = std::make_unique<Controller>(&clock_, dir, &inventory_, &agents_);
    ASSERT_TRUE(controller_->manager->Recover().ok());
  }

  // One second passes; agents answer; the manager ticks.
  void Step() {
    clock_.Advance(absl::Seconds(1));
    agents_.AnswerAll();
    controller_->manager->Tick();
  }

  weft::v1::RolloutPhase Phase() { return controller_->manager->Get("")->phase(); }

  bool RunUntil(weft::v1::RolloutPhase phase, int max_steps = 120) {
    for (int i = 0; i < max_steps && Phase() != phase; ++i) Step();
    return Phase() == phase;
  }

  double PhaseMetric(const std::string& phase) {
    return MetricValue(controller_->registry, "weft_controller_rollout_phase", {{"phase", phase}})
        .value_or(-1);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  ControllerMetrics controller_metrics_;
  Inventory inventory_;
  FakeAgents agents_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(RolloutManagerTest, RolloutCompletesAndEveryNodeHasTheNewVersion) {
  StartController(weft::testing::TempPath("complete"));
  absl::StatusOr<weft::v1::Rollout> started = controller_->manager->Start(Request(20));
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_EQ(started->version(), 1u);
  EXPECT_EQ(started->steps(0).nodes_size(), 3);  // one per rack
  EXPECT_EQ(agents_.inbox.size(), 3u);           // the canary was sent at once
  EXPECT_EQ(agents_.inbox.begin()->second.dcqcn().rp_ai_rate(), 20u);
  EXPECT_EQ(PhaseMetric("canary"), 1);
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  for (const auto& [node, sync] : controller_->desired.All()) {
    EXPECT_EQ(sync.applied_version, 1u) << node;
    EXPECT_EQ(sync.last_good_version, 1u) << node;
    EXPECT_EQ(sync.status, SyncStatus::kInSync) << node;
  }
  EXPECT_EQ(controller_->desired.All().size(), 6u);
  EXPECT_EQ(PhaseMetric("completed"), 1);
  EXPECT_EQ(PhaseMetric("canary"), 0);
  EXPECT_EQ(MetricValue(controller_->registry, "weft_controller_rollouts_total",
                        {{"result", "completed"}}),
            1);
  EXPECT_EQ(MetricValue(controller_->registry, "weft_controller_desired_state_nodes",
                        {{"status", "in_sync"}}),
            6);

  // A second rollout rolls back to the first one's content under version 4.
  agents_.refuse = {"n11"};
  absl::StatusOr<weft::v1::Rollout> second = controller_->manager->Start(Request(30));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->version(), 3u);
  EXPECT_EQ(second->previous_version(), 1u);
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_ROLLED_BACK));
  EXPECT_THAT(controller_->manager->Get("")->reason(), HasSubstr("canary: 1 of 3 nodes NACKed"));
  const NodeSync n21 = *controller_->desired.Get("n21");
  EXPECT_EQ(n21.desired.version(), 4u);
  EXPECT_EQ(n21.desired.dcqcn().rp_ai_rate(), 20u);  // the last good content
  EXPECT_EQ(n21.applied_version, 4u);
  // Not in the canary: never touched.
  EXPECT_EQ(controller_->desired.Get("n12")->desired.version(), 1u);
  EXPECT_EQ(controller_->manager->List().rollouts_size(), 2);
}

TEST_F(RolloutManagerTest, NodeRegisteringMidRolloutGetsTheNewVersionWhenItCompletes) {
  StartController(weft::testing::TempPath("late"));
  ASSERT_TRUE(controller_->manager->Start(Request(20)).ok());
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_BAKING));
  weft::v1::NodeInfo info;
  info.set_name("n99");
  info.set_rack("rack-9");
  weft::v1::Nic* nic = info.add_nics();
  nic->set_device("mlx5_0");
  nic->set_port(1);
  ASSERT_TRUE(inventory_.Register(info, 0).ok());
  Step();
  // No policy was ever good: nothing to give it yet, and it is not in the plan.
  EXPECT_FALSE(controller_->desired.Get("n99").has_value());
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  Step();
  const std::optional<NodeSync> late = controller_->desired.Get("n99");
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->desired.version(), 1u);
  EXPECT_EQ(late->applied_version, 1u);
  EXPECT_EQ(late->desired.dcqcn().rp_ai_rate(), 20u);
}

TEST_F(RolloutManagerTest, EditingThePolicyFileStartsARollout) {
  StartController(weft::testing::TempPath("watch"));
  const std::string path = weft::testing::TempPath("watched-policy.yaml");
  std::ofstream(path) << Request(20).policy_yaml();
  controller_->manager->WatchPolicyFile(path, absl::Seconds(3));
  Step();
  Step();
  EXPECT_FALSE(controller_->manager->Get("").ok()) << "started within the grace period";
  Step();
  Step();
  absl::StatusOr<weft::v1::Rollout> first = controller_->manager->Get("");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->source(), "policy_file " + path);
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  // Touched but unchanged: nothing new.
  std::ofstream(path) << Request(20).policy_yaml();
  for (int i = 0; i < 3; ++i) Step();
  EXPECT_EQ(controller_->manager->List().rollouts_size(), 1);
  // An invalid edit is left alone; a valid one rolls out.
  std::ofstream(path) << "qos: {trust: bogus}\n";
  for (int i = 0; i < 3; ++i) Step();
  EXPECT_EQ(controller_->manager->List().rollouts_size(), 1);
  absl::SleepFor(absl::Milliseconds(20));  // a new modification time
  std::ofstream(path) << Request(25).policy_yaml();
  Step();
  EXPECT_EQ(controller_->manager->List().rollouts_size(), 2);
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  EXPECT_EQ(controller_->desired.Get("n31")->applied_version, 3u);
  EXPECT_EQ(controller_->desired.Get("n31")->desired.dcqcn().rp_ai_rate(), 25u);
}

TEST_F(RolloutManagerTest, OnlyOneActiveRolloutAndABadPolicyIsRefused) {
  StartController(weft::testing::TempPath("one"));
  weft::v1::PolicyRequest bad = Request(20);
  bad.set_policy_yaml(absl::StrReplaceAll(bad.policy_yaml(), {{"dscp: 48", "dscp: 26"}}));
  absl::StatusOr<weft::v1::Rollout> refused = controller_->manager->Start(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("policy.yaml: "));
  EXPECT_TRUE(agents_.inbox.empty());
  ASSERT_TRUE(controller_->manager->Start(Request(20)).ok());
  EXPECT_EQ(controller_->manager->Start(Request(30)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(RolloutManagerTest, DiffCountsNodesPerChange) {
  StartController(weft::testing::TempPath("diff"));
  absl::StatusOr<weft::v1::DiffPolicyResponse> diff = controller_->manager->Diff(Request(20));
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_EQ(diff->nodes_total(), 6u);
  EXPECT_EQ(diff->nodes_changed(), 6u);
  ASSERT_TRUE(controller_->manager->Start(Request(20)).ok());
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  diff = controller_->manager->Diff(Request(25));
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->nodes_changed(), 6u);
  ASSERT_EQ(diff->changes_size(), 1);
  EXPECT_EQ(diff->changes(0).parameter(), "dcqcn.rp_ai_rate");
  EXPECT_EQ(diff->changes(0).from(), "20");
  EXPECT_EQ(diff->changes(0).to(), "25");
  EXPECT_EQ(diff->changes(0).nodes(), 6u);
  EXPECT_EQ(controller_->manager->Diff(Request(20))->nodes_changed(), 0u);
}

TEST_F(RolloutManagerTest, PauseResumeAbortByHand) {
  StartController(weft::testing::TempPath("hand"));
  ASSERT_TRUE(controller_->manager->Start(Request(20)).ok());
  Step();
  Step();
  ASSERT_EQ(Phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  ASSERT_TRUE(controller_->manager->Pause("").ok());
  for (int i = 0; i < 30; ++i) Step();
  EXPECT_EQ(Phase(), weft::v1::ROLLOUT_PHASE_PAUSED);
  EXPECT_EQ(PhaseMetric("paused"), 1);
  EXPECT_EQ(controller_->manager->Pause("").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(controller_->manager->Resume("rollout-9").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(controller_->manager->Resume("rollout-1").ok());
  EXPECT_EQ(Phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  ASSERT_TRUE(controller_->manager->Abort("", "testing").ok());
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_ABORTED));
  // No policy was ever good: the canary went back to the firmware defaults.
  const NodeSync n11 = *controller_->desired.Get("n11");
  EXPECT_EQ(n11.desired.version(), 2u);
  EXPECT_EQ(n11.desired.dcqcn().rp_ai_rate(), 5u);
  EXPECT_FALSE(n11.desired.has_qos());
  EXPECT_EQ(MetricValue(controller_->registry, "weft_controller_rollouts_total",
                        {{"result", "aborted"}}),
            1);
}

TEST_F(RolloutManagerTest, RestartMidRolloutResumesWhereItWas) {
  const std::string dir = weft::testing::TempPath("restart");
  StartController(dir);
  ASSERT_TRUE(controller_->manager->Start(Request(20)).ok());
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_WAVE));
  Step();  // the first wave answers
  ASSERT_EQ(Phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  ASSERT_EQ(controller_->manager->Get("")->current_step(), 1u);

  // The controller restarts: a new manager over the same directory; the agents keep
  // what they applied and report it when they reconnect.
  const std::map<std::string, NodeSync> before = controller_->desired.All();
  StartController(dir);
  EXPECT_EQ(Phase(), weft::v1::ROLLOUT_PHASE_BAKING);
  EXPECT_EQ(controller_->manager->Get("")->current_step(), 1u);
  for (const auto& [node, sync] : before) {
    controller_->desired.OnStreamAttached(node, sync.applied_version);
  }
  agents_.inbox.clear();
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_COMPLETED));
  const weft::v1::Rollout done = *controller_->manager->Get("");
  bool noted = false;
  for (const auto& e : done.history()) noted |= absl::StrContains(e.message(), "restarted");
  EXPECT_TRUE(noted);
  for (const auto& [node, sync] : controller_->desired.All()) {
    EXPECT_EQ(sync.applied_version, 1u) << node;
  }
  // A new rollout after the restart gets a version above every earlier one.
  agents_.inbox.clear();
  absl::StatusOr<weft::v1::Rollout> next = controller_->manager->Start(Request(30));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->version(), 3u);
}

TEST_F(RolloutManagerTest, UnreadableRecordAfterRestartRollsBackTheActiveRollout) {
  const std::string dir = weft::testing::TempPath("cannot-tell");
  StartController(dir);
  ASSERT_TRUE(controller_->manager->Start(Request(20)).ok());
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_BAKING));
  const std::map<std::string, NodeSync> before = controller_->desired.All();
  ASSERT_TRUE(controller_->database->database()
                  .Write(store::Durability::kAcknowledged,
                         [](store::Transaction& txn) {
                           return txn.Exec(
                               "INSERT INTO rollouts(id, record) VALUES('rollout-7', ?)",
                               {store::Blob{std::string("not a proto")}});
                         })
                  .ok());
  StartController(dir);
  EXPECT_EQ(Phase(), weft::v1::ROLLOUT_PHASE_ROLLING_BACK);
  for (const auto& [node, sync] : before) {
    controller_->desired.OnStreamAttached(node, sync.applied_version);
  }
  ASSERT_TRUE(RunUntil(weft::v1::ROLLOUT_PHASE_ROLLED_BACK));
  EXPECT_THAT(controller_->manager->Get("")->reason(), HasSubstr("unreadable"));
  EXPECT_EQ(controller_->desired.Get("n11")->applied_version, 2u);
}

}  // namespace
}  // namespace weft::controller
