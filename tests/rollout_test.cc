// Multi-process test of policy rollouts: a real weft-controller, six real weft-agent
// processes (simulated NICs, whose tunables drive their counters) in three racks, and
// weftctl, on loopback. The operator's view is what is checked: weftctl policy/rollout
// output and the controller's /metrics.
//   - a rollout that completes: canary (one node per rack), bake, waves; every node ACKs;
//   - a canary node whose agent rejects tunables (--fault reject_tunables): NACK, the
//     rollout rolls back and the waves never start;
//   - a canary node that starts a PFC storm during the bake (--fault pfc_storm with
//     --fault_delay_ms): the KPI regresses and the rollout rolls back;
//   - the controller is restarted (SIGTERM) while a rollout bakes: it resumes from
//     state_dir and completes;
//   - the controller is killed (SIGKILL) at a random moment of each step of a rollout:
//     after each restart the rollout is at least as far as weftctl last saw it, and it
//     completes without a rollback;
//   - the controller watches policy_file: the file rolls out at start, and again when
//     it is edited.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/weft/v1/rollout.pb.h"
#include "common/testing/temp_dir.h"
#include "tests/cluster_harness.h"
#include "tests/subprocess.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using weft::testing::Cluster;
using weft::testing::CommandResult;
using weft::testing::SeriesValue;
using weft::testing::TempPath;

constexpr int kIntervalMs = 200;
constexpr int kNics = 4;

// The example's QoS, a changed DCQCN default profile, and a rollout paced for a test:
// a short bake, waves of two, and KPI thresholds that the simulator's normal noise
// stays inside (a PFC storm on one NIC of four adds ~47 points of pause time per node).
std::string PolicyYaml(int bake_s, int ai_rate) {
  return absl::StrCat(R"(qos:
  trust: dscp
  classes:
    - {name: training, dscp: 26, priority: 3, lossless: true, roce: true}
    - {name: storage, dscp: 24, priority: 3, lossless: true}
    - {name: control, dscp: 16, priority: 2}
    - {name: cnp, dscp: 48, priority: 6, cnp: true}
  traffic_classes:
    - {tc: 0, priorities: [0, 1, 4, 5, 7], tsa: ets, bandwidth_percent: 40}
    - {tc: 2, priorities: [2], tsa: ets, bandwidth_percent: 10}
    - {tc: 3, priorities: [3], tsa: ets, bandwidth_percent: 50}
    - {tc: 6, priorities: [6], tsa: strict}
dcqcn:
  profiles:
    - name: default
      params: {rp_ai_rate: )",
                      ai_rate, R"(, rp_hai_rate: 100}
    - name: gentle
      params: {rp_min_rate: 1000}
  assignments:
    - {profile: gentle, racks: [rack-3]}
rollout:
  canary_per_rack: 1
  bake_s: )",
                      bake_s, R"(
  wave_size: 2
  wave_bake_s: 1
  ack_timeout_s: 10
  max_nack_share: 0
  kpis:
    pfc_pause_share_increase: 0.05
    ecn_marks_increase_ratio: 100
    cnps_increase_ratio: 100
    rate_floor_per_s: 1000000
    retransmissions_increase_per_s: 100000
    throughput_drop_ratio: 0.95
    sustain_s: 1
)");
}

class RolloutTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cluster_.StartController()); }

  static std::string TestName() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  // Three racks of two: n-r1-1 n-r1-2 in rack-1 and so on. The canary is the first
  // node of each rack (n-rX-1). `extra` adds flags per node.
  void StartAgents(std::map<std::string, std::vector<std::string>> extra = {}) {
    for (int r = 1; r <= 3; ++r) {
      for (int i = 1; i <= 2; ++i) {
        const std::string node = absl::StrCat("n-r", r, "-", i);
        std::vector<std::string> flags = {"--traffic_level=0.3"};
        flags.insert(flags.end(), extra[node].begin(), extra[node].end());
        cluster_.StartAgent({.name = node,
                             .rack = absl::StrCat("rack-", r),
                             .pod = "pod-1",
                             .interval_ms = kIntervalMs,
                             .nics = kNics,
                             .flags = flags});
      }
    }
  }

  CommandResult Weftctl(std::vector<std::string> args) { return cluster_.Weftctl(args); }
  std::string Metrics() { return cluster_.Metrics(); }
  double Metric(const std::string& series) { return cluster_.Metric(series).value_or(-1); }
  ::testing::AssertionResult WaitForMetric(const std::string& series, double value,
                                           absl::Duration timeout) {
    return cluster_.WaitForMetric(series, value, timeout);
  }

  // All six nodes registered and reporting.
  ::testing::AssertionResult WaitForNodes(absl::Duration timeout) {
    return WaitForMetric("weft_controller_nodes{state=\"healthy\"}", 6, timeout);
  }

  std::string PolicyFile(int bake_s, int ai_rate = 20) {
    const std::string path = TempPath(absl::StrCat(TestName(), ".policy.yaml"));
    std::ofstream(path) << PolicyYaml(bake_s, ai_rate);
    return path;
  }

  // `weftctl rollout status --output json`, parsed.
  std::optional<weft::v1::Rollout> Status() {
    CommandResult result = Weftctl({"--output", "json", "rollout", "status"});
    if (result.exit_status != 0) return std::nullopt;
    weft::v1::Rollout rollout;
    if (!google::protobuf::util::JsonStringToMessage(result.out, &rollout).ok()) {
      return std::nullopt;
    }
    return rollout;
  }

  std::optional<weft::v1::Rollout> WaitForPhase(weft::v1::RolloutPhase phase,
                                                absl::Duration timeout) {
    std::optional<weft::v1::Rollout> last;
    EXPECT_TRUE(weft::testing::WaitFor(
        absl::StrCat("rollout in ", weft::v1::RolloutPhase_Name(phase)), timeout,
        [&](std::string* observed) {
          last = Status();
          *observed = last.has_value() ? last->DebugString() : "no status";
          return last.has_value() && last->phase() == phase;
        },
        absl::Milliseconds(200)));
    if (last.has_value() && last->phase() == phase) return last;
    return std::nullopt;
  }

  Cluster cluster_{{.telemetry_interval_ms = kIntervalMs}};
};

TEST_F(RolloutTest, RolloutCompletesAcrossThreeRacks) {
  StartAgents();
  ASSERT_TRUE(WaitForNodes(absl::Seconds(20)));
  const std::string policy = PolicyFile(/*bake_s=*/2);

  CommandResult diff = Weftctl({"policy", "diff", policy});
  ASSERT_EQ(diff.exit_status, 0) << diff.err;
  EXPECT_THAT(diff.out, HasSubstr("6 of 6 nodes would change"));
  EXPECT_THAT(diff.out, HasSubstr("dcqcn.rp_ai_rate"));
  // rack-3's two nodes use the gentle profile: its rate floor changes on two nodes.
  EXPECT_THAT(diff.out, ::testing::ContainsRegex("dcqcn.rp_min_rate +\\(none\\) +1000 +2"));

  CommandResult started = Weftctl({"rollout", "start", policy});
  ASSERT_EQ(started.exit_status, 0) << started.err;
  EXPECT_THAT(started.out, HasSubstr("rollout rollout-1  version 1"));

  std::optional<weft::v1::Rollout> done =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_COMPLETED, absl::Seconds(60));
  ASSERT_TRUE(done.has_value());
  ASSERT_EQ(done->steps_size(), 3);  // canary of 3, then waves of 2 and 1
  EXPECT_THAT(std::vector<std::string>(done->steps(0).nodes().begin(),
                                       done->steps(0).nodes().end()),
              ::testing::ElementsAre("n-r1-1", "n-r2-1", "n-r3-1"));
  for (const auto& step : done->steps()) {
    EXPECT_EQ(step.acked(), static_cast<uint32_t>(step.nodes_size())) << step.DebugString();
    EXPECT_GT(step.baked_us(), 0);
  }
  EXPECT_EQ(done->last_judgement().kpis_size(), 5);

  // Every agent applied version 1 and stays in sync; the metrics say so.
  EXPECT_TRUE(WaitForMetric("weft_controller_desired_state_nodes{status=\"in_sync\"}", 6,
                            absl::Seconds(5)))
      << Metrics();
  const std::string metrics = Metrics();
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_rollout_phase{phase=\"completed\"}"), 1);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_rollout_phase{phase=\"canary\"}"), 0);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_rollouts_total{result=\"completed\"}"), 1);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_desired_state_version"), 1);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_tunables_drift_nodes"), 0);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_desired_state_acks_total{result=\"ack\"}"), 6);

  // Nothing left to change; the history and the human status show it.
  diff = Weftctl({"policy", "diff", policy});
  EXPECT_THAT(diff.out, HasSubstr("0 of 6 nodes would change"));
  CommandResult history = Weftctl({"rollout", "history"});
  EXPECT_THAT(history.out, HasSubstr("rollout-1  1        COMPLETED"));
  CommandResult status = Weftctl({"rollout", "status"});
  EXPECT_THAT(status.out, HasSubstr("phase COMPLETED"));
  EXPECT_THAT(status.out, HasSubstr("wave 2 *"));
  EXPECT_THAT(status.out, HasSubstr("pfc_pause_share"));
}

// The tuner as an operator drives it: a dry run that can never be applied, a search for
// one rack whose proposal `weftctl tune apply` rolls out like any policy, and the
// proposal following its rollout to the end.
TEST_F(RolloutTest, ATunedProposalIsAppliedThroughAnOrdinaryRollout) {
  StartAgents();
  ASSERT_TRUE(WaitForNodes(absl::Seconds(20)));
  CommandResult refused = Weftctl({"tune", "propose"});
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_THAT(refused.err, HasSubstr("no policy is in force"));
  // The firmware's DCQCN defaults in force (rp_ai_rate 5, nothing else set): on an 8→1
  // incast they hold the queue at the PFC threshold, which the tuner learns to avoid.
  const std::string policy = TempPath(absl::StrCat(TestName(), ".policy.yaml"));
  std::ofstream(policy) << absl::StrReplaceAll(PolicyYaml(/*bake_s=*/1, /*ai_rate=*/5),
                                               {{", rp_hai_rate: 100", ""}});
  ASSERT_EQ(Weftctl({"rollout", "start", policy}).exit_status, 0);
  ASSERT_TRUE(WaitForPhase(weft::v1::ROLLOUT_PHASE_COMPLETED, absl::Seconds(60)).has_value());

  CommandResult dry = Weftctl({"tune", "propose", "--dry-run", "--wait", "--max-evaluations=3"});
  ASSERT_EQ(dry.exit_status, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("proposal tune-1"));
  EXPECT_THAT(dry.out, HasSubstr("(dry run)"));
  EXPECT_THAT(dry.out, HasSubstr("all-reduce"));  // the evidence names the scenarios
  EXPECT_EQ(Weftctl({"tune", "apply", "tune-1"}).exit_status, 1);

  CommandResult proposed = Weftctl(
      {"tune", "propose", "--scope=rack-1", "--wait", "--max-evaluations=40", "--seed=3"});
  ASSERT_EQ(proposed.exit_status, 0) << proposed.err;
  ASSERT_THAT(proposed.out, HasSubstr("proposal tune-2  PROPOSED  scope rack-1")) << proposed.out;
  CommandResult applied = Weftctl({"tune", "apply", "tune-2"});
  ASSERT_EQ(applied.exit_status, 0) << applied.err;
  EXPECT_THAT(applied.out, HasSubstr("ROLLING_OUT"));
  EXPECT_THAT(applied.out, HasSubstr("weftctl rollout status rollout-3"));
  std::optional<weft::v1::Rollout> done =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_COMPLETED, absl::Seconds(60));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->id(), "rollout-3");
  EXPECT_EQ(done->source(), "tune-2");
  // The tuned profile is assigned to rack-1 only.
  bool assigned = false;
  for (const auto& assignment : done->policy().dcqcn().assignments()) {
    if (assignment.profile() == "tune-2") {
      assigned = std::vector<std::string>(assignment.racks().begin(), assignment.racks().end()) ==
                 std::vector<std::string>{"rack-1"};
    }
  }
  EXPECT_TRUE(assigned) << done->policy().dcqcn().DebugString();
  EXPECT_TRUE(cluster_.WaitForMetric("weft_controller_tune_rollouts_total{result=\"completed\"}",
                                     1, absl::Seconds(5)))
      << Metrics();
  CommandResult history = Weftctl({"tune", "history"});
  EXPECT_THAT(history.out, ::testing::ContainsRegex("tune-1 +DRY_RUN|tune-1 +NO_BETTER"));
  EXPECT_THAT(history.out, ::testing::ContainsRegex("tune-2 +COMPLETED +rack-1"));
}

TEST_F(RolloutTest, CanaryNackRollsBack) {
  // n-r2-1 is rack-2's canary; its agent refuses every tunable write.
  StartAgents({{"n-r2-1", {"--fault", "reject_tunables"}}});
  ASSERT_TRUE(WaitForNodes(absl::Seconds(20)));
  CommandResult started = Weftctl({"rollout", "start", PolicyFile(/*bake_s=*/30)});
  ASSERT_EQ(started.exit_status, 0) << started.err;

  std::optional<weft::v1::Rollout> back =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_ROLLED_BACK, absl::Seconds(40));
  ASSERT_TRUE(back.has_value());
  EXPECT_THAT(back->reason(), HasSubstr("canary: 1 of 3 nodes NACKed"));
  EXPECT_EQ(back->steps(0).nacked(), 1u);
  EXPECT_EQ(back->steps(1).started_us(), 0) << "a wave started after a NACK";
  EXPECT_THAT(std::vector<std::string>(back->rollback_nodes().begin(),
                                       back->rollback_nodes().end()),
              ::testing::ElementsAre("n-r1-1", "n-r2-1", "n-r3-1"));

  // Every canary took the rollback (version 2: firmware DCQCN defaults, QoS left as
  // it is, so the rejecting agent has nothing to refuse); the other three nodes were
  // never sent anything.
  EXPECT_TRUE(WaitForMetric("weft_controller_desired_state_nodes{status=\"in_sync\"}", 3,
                            absl::Seconds(5)))
      << Metrics();
  const std::string metrics = Metrics();
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_desired_state_nodes{status=\"nacked\"}"), 0);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_rollouts_total{result=\"rolled_back\"}"), 1);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_rollout_phase{phase=\"rolled_back\"}"), 1);
  EXPECT_EQ(SeriesValue(metrics, "weft_controller_desired_state_version"), 2);
  EXPECT_GE(SeriesValue(metrics, "weft_controller_desired_state_acks_total{result=\"nack\"}"),
            1);
  CommandResult status = Weftctl({"rollout", "status"});
  EXPECT_THAT(status.out, HasSubstr("reason: canary: 1 of 3 nodes NACKed"));
}

TEST_F(RolloutTest, PfcStormDuringTheBakeRollsBack) {
  // rack-3's canary starts a PFC storm 10 s after its agent starts: after the canary
  // applied the new state, while it bakes.
  StartAgents({{"n-r3-1", {"--fault", "pfc_storm", "--fault_delay_ms=10000"}}});
  ASSERT_TRUE(WaitForNodes(absl::Seconds(8)));
  CommandResult started = Weftctl({"rollout", "start", PolicyFile(/*bake_s=*/60)});
  ASSERT_EQ(started.exit_status, 0) << started.err;
  ASSERT_TRUE(WaitForPhase(weft::v1::ROLLOUT_PHASE_BAKING, absl::Seconds(10)).has_value());

  std::optional<weft::v1::Rollout> back =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_ROLLED_BACK, absl::Seconds(30));
  ASSERT_TRUE(back.has_value());
  EXPECT_THAT(back->reason(), HasSubstr("KPI regression for 1 s: pfc_pause_share"));
  EXPECT_THAT(back->reason(), HasSubstr("changed nodes vs unchanged nodes"));
  bool pfc_regressed = false;
  for (const auto& kpi : back->last_judgement().kpis()) {
    if (kpi.name() == "pfc_pause_share") pfc_regressed = kpi.regressed();
  }
  EXPECT_TRUE(pfc_regressed) << back->last_judgement().DebugString();
  EXPECT_EQ(back->steps(1).started_us(), 0);
  EXPECT_EQ(Metric("weft_controller_rollouts_total{result=\"rolled_back\"}"), 1);
  // The rollback reached every canary (version 2).
  EXPECT_TRUE(WaitForMetric("weft_controller_desired_state_nodes{status=\"in_sync\"}", 3,
                            absl::Seconds(5)))
      << Metrics();
}

TEST_F(RolloutTest, ControllerRestartMidRolloutResumes) {
  StartAgents();
  ASSERT_TRUE(WaitForNodes(absl::Seconds(20)));
  CommandResult started = Weftctl({"rollout", "start", PolicyFile(/*bake_s=*/4)});
  ASSERT_EQ(started.exit_status, 0) << started.err;
  ASSERT_TRUE(WaitForPhase(weft::v1::ROLLOUT_PHASE_BAKING, absl::Seconds(10)).has_value());

  ASSERT_EQ(cluster_.StopController(SIGTERM), 0);
  ASSERT_TRUE(cluster_.StartController());

  // Right after the restart it is still the same rollout, baking the canary.
  std::optional<weft::v1::Rollout> resumed = Status();
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ(resumed->id(), "rollout-1");
  EXPECT_EQ(resumed->current_step(), 0u);
  EXPECT_EQ(resumed->phase(), weft::v1::ROLLOUT_PHASE_BAKING);

  std::optional<weft::v1::Rollout> done =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_COMPLETED, absl::Seconds(60));
  ASSERT_TRUE(done.has_value());
  bool noted = false;
  for (const auto& event : done->history()) {
    noted |= absl::StrContains(event.message(), "controller restarted; resumed in BAKING");
  }
  EXPECT_TRUE(noted) << done->DebugString();
  EXPECT_TRUE(WaitForMetric("weft_controller_desired_state_nodes{status=\"in_sync\"}", 6,
                            absl::Seconds(10)))
      << Metrics();
  // The canary agents kept version 1 across the restart and were not sent it again:
  // six ACKs in this controller's life would mean the canary was re-applied; the
  // three wave nodes ACKed, the canary reported version 1 in its hello.
  EXPECT_EQ(Metric("weft_controller_desired_state_acks_total{result=\"ack\"}"), 3);
}

// How far a rollout has gone: its step, then where in the step (sent, baking); a
// finished rollout is past every step.
std::pair<uint32_t, int> Progress(const weft::v1::Rollout& rollout) {
  if (rollout.phase() == weft::v1::ROLLOUT_PHASE_COMPLETED) return {UINT32_MAX, 0};
  return {rollout.current_step(), rollout.phase() == weft::v1::ROLLOUT_PHASE_BAKING ? 1 : 0};
}

TEST_F(RolloutTest, ControllerKilledAtRandomPointsOfARolloutLosesNothing) {
  // Seeded so a failure can be replayed: WEFT_CRASH_SEED=<printed seed>.
  const char* seed_env = std::getenv("WEFT_CRASH_SEED");
  const uint32_t seed = seed_env != nullptr
                            ? static_cast<uint32_t>(std::strtoul(seed_env, nullptr, 10))
                            : std::random_device{}();
  std::cout << "rollout kill seed " << seed << std::endl;
  std::mt19937 rng(seed);
  StartAgents();
  ASSERT_TRUE(WaitForNodes(absl::Seconds(20)));
  CommandResult started = Weftctl({"rollout", "start", PolicyFile(/*bake_s=*/1)});
  ASSERT_EQ(started.exit_status, 0) << started.err;

  // One kill in each step of the rollout (canary, wave 1, wave 2), at a random moment
  // once the step has started: while its desired state is out or while it bakes.
  int kills = 0;
  std::vector<std::string> seen;  // the phases the kills landed in, for the log
  for (uint32_t step = 0; step < 3; ++step) {
    const std::pair<uint32_t, int> target = {
        step, std::uniform_int_distribution<int>(0, 1)(rng)};  // 0: sent, 1: baking
    ASSERT_TRUE(weft::testing::WaitFor(
        absl::StrCat("the rollout at step ", step, target.second == 1 ? ", baking" : ""),
        absl::Seconds(60),
        [&](std::string* observed) {
          const std::optional<weft::v1::Rollout> reached = Status();
          *observed = reached.has_value() ? reached->DebugString() : "no status";
          return reached.has_value() && Progress(*reached) >= target;
        },
        absl::Milliseconds(100)));
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(0, 400)(rng)));
    // What weftctl was told last before the kill: the controller had saved it.
    std::optional<weft::v1::Rollout> before = Status();
    ASSERT_TRUE(before.has_value());
    if (before->phase() == weft::v1::ROLLOUT_PHASE_COMPLETED) break;
    seen.push_back(absl::StrCat(weft::v1::RolloutPhase_Name(before->phase()), "/step ",
                                before->current_step()));
    ASSERT_EQ(cluster_.StopController(SIGKILL), 128 + SIGKILL);
    ++kills;
    ASSERT_TRUE(cluster_.StartController());

    std::optional<weft::v1::Rollout> after = Status();
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->id(), before->id());
    EXPECT_EQ(after->version(), before->version());
    EXPECT_GE(Progress(*after), Progress(*before))
        << "before the kill: " << before->DebugString() << "\nafter: " << after->DebugString();
    EXPECT_GT(after->history_size(), before->history_size())
        << "lost history, or the restart is not in it";
    for (int i = 0; i < before->steps_size() && i < after->steps_size(); ++i) {
      EXPECT_GE(after->steps(i).acked(), before->steps(i).acked()) << "step " << i;
    }
  }
  std::cout << "rollout kill: " << kills << " kills, in " << absl::StrJoin(seen, ", ")
            << std::endl;
  EXPECT_GE(kills, 2) << "the rollout finished before the kills could test anything";

  std::optional<weft::v1::Rollout> done =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_COMPLETED, absl::Seconds(90));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->steps_size(), 3);
  for (const auto& step : done->steps()) {
    EXPECT_EQ(step.acked(), static_cast<uint32_t>(step.nodes_size())) << step.DebugString();
    EXPECT_EQ(step.nacked(), 0u) << step.DebugString();
  }
  EXPECT_TRUE(WaitForMetric("weft_controller_desired_state_nodes{status=\"in_sync\"}", 6,
                            absl::Seconds(10)))
      << Metrics();
  EXPECT_EQ(Metric("weft_controller_desired_state_version"), 1);
}

TEST_F(RolloutTest, EditingTheWatchedPolicyFileRollsItOut) {
  // The controller watches policy_file: the file as it is at start rolls out once the
  // agents had time to register; an edit rolls out again.
  const std::string policy = PolicyFile(/*bake_s=*/1, /*ai_rate=*/20);
  const std::string config = TempPath(absl::StrCat(TestName(), ".controller.yaml"));
  std::ofstream(config) << "policy_file: " << policy << "\n";
  ASSERT_EQ(cluster_.StopController(SIGTERM), 0);
  ASSERT_TRUE(cluster_.StartController({"--config", config}));
  StartAgents();
  std::optional<weft::v1::Rollout> first =
      WaitForPhase(weft::v1::ROLLOUT_PHASE_COMPLETED, absl::Seconds(60));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->source(), "policy_file " + policy);
  EXPECT_EQ(first->steps(0).nodes_size(), 3) << "the canary was chosen before all racks registered";

  std::ofstream(policy) << PolicyYaml(/*bake_s=*/1, /*ai_rate=*/40);
  ASSERT_TRUE(WaitForMetric("weft_controller_rollouts_total{result=\"completed\"}", 2,
                            absl::Seconds(60)));
  std::optional<weft::v1::Rollout> second = Status();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->version(), 3u);
  EXPECT_EQ(second->previous_version(), 1u);
  EXPECT_TRUE(WaitForMetric("weft_controller_desired_state_nodes{status=\"in_sync\"}", 6,
                            absl::Seconds(5)))
      << Metrics();
}

}  // namespace
}  // namespace weft
