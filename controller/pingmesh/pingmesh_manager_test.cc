#include "controller/pingmesh/pingmesh_manager.h"

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr absl::Duration kWindow = absl::Milliseconds(250);
constexpr absl::Duration kLateness = absl::Milliseconds(500);

weft::v1::NodeStatus Node(const std::string& name, const std::string& rack, int host) {
  weft::v1::NodeStatus status;
  status.set_reporting(true);
  weft::v1::NodeInfo* info = status.mutable_info();
  info->set_name(name);
  info->set_rack(rack);
  info->set_probe_udp_port(7412);
  for (int i = 0; i < 2; ++i) {
    weft::v1::Nic* nic = info->add_nics();
    nic->set_device(absl::StrCat("mlx5_", i));
    nic->set_speed_mbps(400000);
    weft::v1::GidEntry* gid = nic->add_gids();
    gid->set_type(weft::v1::GID_TYPE_ROCE_V2);
    gid->set_gid(absl::StrCat("0000:0000:0000:0000:0000:ffff:0a00:",
                              absl::Hex(host * 16 + i, absl::kZeroPad4)));
  }
  return status;
}

class PingmeshManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 2 racks of 8 nodes, 2 NICs each: one ToR per rack.
    for (int r = 0; r < 2; ++r) {
      for (int n = 1; n <= 8; ++n) {
        const std::string rack = r == 0 ? "rack-a" : "rack-b";
        nodes_.push_back(Node(absl::StrCat(r == 0 ? "a" : "b", n), rack, r * 8 + n));
      }
    }
    PingmeshManagerOptions options;
    options.window = kWindow;
    options.lateness = kLateness;
    options.replan_interval = absl::Seconds(5);
    options.matrix_period = absl::Seconds(2);
    options.tor_uplinks = 2;
    options.pinglist.traffic_class = 26;
    ASSERT_TRUE(PingmeshManager::ValidateOptions(options).ok());
    manager_ = std::make_unique<PingmeshManager>(
        &clock_, [this] { return nodes_; },
        [this](const std::string& node, weft::v1::ControllerMessage message) {
          if (offline_.contains(node)) return absl::NotFoundError("no stream");
          sent_.push_back({node, message.pinglist()});
          lists_[node] = message.pinglist();
          return absl::OkStatus();
        },
        &events_, &metrics_, options,
        [this](const std::string& node, std::vector<Finding> findings) {
          ++findings_calls_;
          if (refuse_findings_) return absl::NotFoundError("node " + node + " is not registered");
          findings_[node] = std::move(findings);
          return absl::OkStatus();
        });
  }

  // Every planned stream reports window [start, start + kWindow); streams to or from
  // `dead` (a "node/nic") lose every probe. With `say_through`, each node also says it
  // has sent every window through this one's end (as agents do); `silent` nodes send
  // nothing.
  void ReportWindow(absl::Time start, const std::string& dead = "", bool say_through = false,
                    const absl::flat_hash_set<std::string>& silent = {}) {
    for (const auto& [node, list] : lists_) {
      if (silent.contains(node)) continue;
      google::protobuf::RepeatedPtrField<weft::v1::ProbeWindow> windows;
      for (const weft::v1::ProbePeer& peer : list.peers()) {
        const bool lost = absl::StrCat(node, "/", peer.source_nic()) == dead ||
                          absl::StrCat(peer.node(), "/", peer.nic()) == dead;
        for (uint32_t port : peer.source_ports()) {
          weft::v1::ProbeWindow* w = windows.Add();
          w->set_peer_node(peer.node());
          w->set_peer_nic(peer.nic());
          w->set_source_nic(peer.source_nic());
          w->set_source_port(port);
          w->set_dscp(peer.dscp());
          w->set_window_start_us(absl::ToUnixMicros(start));
          w->set_window_end_us(absl::ToUnixMicros(start + kWindow));
          w->set_sent(20);
          w->set_lost(lost ? 20 : 0);
          if (!lost) {
            w->set_rtt_min_us(8);
            w->set_rtt_p50_us(10);
            w->set_rtt_p99_us(node[0] == peer.node()[0] ? 14 : 30);
            w->set_sender_host_delay_us(5);
            w->set_responder_host_delay_us(5);
          }
        }
      }
      manager_->OnProbeWindows(node, windows,
                               say_through ? absl::ToUnixMicros(start + kWindow) : 0);
    }
  }

  // Runs `windows` windows as agents that say how far they have sent them do: each is
  // reported and the manager ticks just after its end, well before its lateness.
  void RunReported(int windows, const std::string& dead = "",
                   const absl::flat_hash_set<std::string>& silent = {}) {
    for (int i = 0; i < windows; ++i) {
      if (next_start_ == absl::InfinitePast()) {
        next_start_ = absl::FromUnixMicros(absl::ToUnixMicros(clock_.Now()) /
                                           absl::ToInt64Microseconds(kWindow) *
                                           absl::ToInt64Microseconds(kWindow));
      }
      ReportWindow(next_start_, dead, /*say_through=*/true, silent);
      clock_.Set(std::max(clock_.Now(), next_start_ + kWindow + absl::Milliseconds(1)));
      manager_->Tick();
      next_start_ += kWindow;
    }
  }

  double Judged(const std::string& when) {
    for (const auto& family : registry_.Collect()) {
      if (family.name != "weft_controller_pingmesh_judged_windows_total") continue;
      for (const auto& metric : family.metric) {
        if (metric.label.size() == 1 && metric.label[0].value == when) return metric.counter.value;
      }
    }
    return 0;
  }

  // Runs `windows` windows, each reported and then judged once its lateness passed.
  void Run(int windows, const std::string& dead = "") {
    for (int i = 0; i < windows; ++i) {
      if (next_start_ == absl::InfinitePast()) {
        next_start_ = absl::FromUnixMicros(absl::ToUnixMicros(clock_.Now()) /
                                           absl::ToInt64Microseconds(kWindow) *
                                           absl::ToInt64Microseconds(kWindow));
      }
      ReportWindow(next_start_, dead);
      clock_.Set(std::max(clock_.Now(), next_start_ + kWindow + kLateness));
      manager_->Tick();
      next_start_ += kWindow;
    }
  }

  std::vector<weft::v1::Event> Events() {
    const weft::v1::ListEventsResponse listed = events_.List(EventQuery{});
    return std::vector<weft::v1::Event>(listed.events().begin(), listed.events().end());
  }

  FakeClock clock_{absl::FromUnixSeconds(1'800'000'000)};
  std::vector<weft::v1::NodeStatus> nodes_;
  absl::flat_hash_set<std::string> offline_;
  std::vector<std::pair<std::string, weft::v1::Pinglist>> sent_;
  std::map<std::string, weft::v1::Pinglist> lists_;
  std::map<std::string, std::vector<Finding>> findings_;  // the sink's latest, by node
  int findings_calls_ = 0;
  bool refuse_findings_ = false;  // the sink answers NOT_FOUND
  EventLog events_{1000};
  prometheus::Registry registry_;
  PingmeshMetrics metrics_{registry_};
  std::unique_ptr<PingmeshManager> manager_;
  absl::Time next_start_ = absl::InfinitePast();
};

TEST_F(PingmeshManagerTest, SendsEachNodeItsListAndAgainOnlyWhenTheFleetChanges) {
  manager_->Tick();
  ASSERT_THAT(sent_, SizeIs(16));
  const weft::v1::Pinglist& a1 = lists_.at("a1");
  EXPECT_EQ(a1.window_ms(), 250u);
  // a1/mlx5_0 probes its 7 rail peers under rack-a's ToR, one rack-b node and its own
  // mlx5_1; so does mlx5_1.
  EXPECT_THAT(a1.peers(), SizeIs(18));
  EXPECT_GT(a1.version(), 0u);
  weft::v1::PingmeshStatus status = manager_->Status();
  EXPECT_EQ(status.probed_nodes(), 16u);
  EXPECT_EQ(status.plan_version(), 1u);

  // Nothing changed: nothing is sent, even after the replan interval.
  sent_.clear();
  clock_.Advance(absl::Seconds(6));
  manager_->Tick();
  EXPECT_THAT(sent_, IsEmpty());

  // A node with no UDP responder leaves the plan: it gets an empty list, and every
  // other node a new one (the streams to it are gone and the rates resized).
  const uint64_t a1_version = lists_.at("a1").version();
  nodes_[1].mutable_info()->set_probe_udp_port(0);  // a2
  clock_.Advance(absl::Seconds(6));
  manager_->Tick();
  EXPECT_EQ(lists_.at("a2").peers_size(), 0);
  EXPECT_GT(lists_.at("a1").version(), a1_version);
  EXPECT_THAT(sent_, SizeIs(16));
  status = manager_->Status();
  EXPECT_EQ(status.plan_version(), 2u);
  EXPECT_THAT(status.unprobed(), ElementsAre("a2: its agent does not answer probes "
                                             "(probe.udp_port is 0)"));

  // An agent that reconnects gets its current list again.
  sent_.clear();
  manager_->OnStreamAttached("a3");
  ASSERT_THAT(sent_, SizeIs(1));
  EXPECT_EQ(sent_[0].second.version(), lists_.at("a3").version());
}

TEST_F(PingmeshManagerTest, ADeadNicIsBlamedClearedAndSentAsEvents) {
  manager_->Tick();
  Run(8);
  EXPECT_THAT(manager_->Status().verdicts(), IsEmpty());

  Run(4, "a3/mlx5_1");
  weft::v1::PingmeshStatus status = manager_->Status();
  ASSERT_THAT(status.verdicts(), SizeIs(1));
  const weft::v1::PingmeshVerdict& verdict = status.verdicts(0);
  EXPECT_THAT(verdict.component(), HasSubstr("a3/mlx5_1"));
  EXPECT_THAT(verdict.nodes(), ElementsAre("a3"));
  EXPECT_GT(status.windows_accepted(), 0u);
  EXPECT_EQ(status.windows_unknown(), 0u);
  std::vector<weft::v1::Event> events = Events();
  ASSERT_THAT(events, SizeIs(1));
  EXPECT_EQ(events[0].kind(), weft::v1::EVENT_KIND_RULE_FIRED);
  EXPECT_EQ(events[0].node(), "a3");
  EXPECT_EQ(events[0].finding().rule(), absl::StrCat("pingmesh_", verdict.kind()));
  // The node gets a health finding, once, while the verdict holds.
  ASSERT_THAT(findings_, SizeIs(1));
  ASSERT_THAT(findings_["a3"], SizeIs(1));
  EXPECT_EQ(HealthRuleName(findings_["a3"][0].rule), events[0].finding().rule());
  EXPECT_EQ(findings_["a3"][0].device, verdict.component());
  const int calls = findings_calls_;
  Run(4, "a3/mlx5_1");
  EXPECT_EQ(findings_calls_, calls);

  // The NIC comes back: the verdict clears after the localiser's hysteresis.
  Run(60);
  EXPECT_THAT(manager_->Status().verdicts(), IsEmpty());
  events = Events();
  ASSERT_THAT(events, SizeIs(2));
  EXPECT_EQ(events[1].kind(), weft::v1::EVENT_KIND_RULE_CLEARED);
  EXPECT_THAT(findings_["a3"], IsEmpty());
  EXPECT_EQ(findings_calls_, calls + 1);
}

// Agents send windows as they close and say how far they have: a window every probing
// node has sent is judged at once, not `lateness` after its end, so a dead NIC (whose
// node still reports its lost probes) is named as soon as its second window is in.
TEST_F(PingmeshManagerTest, AWindowEveryProbingNodeHasSentIsJudgedAtOnce) {
  manager_->Tick();
  RunReported(8);
  EXPECT_THAT(manager_->Status().verdicts(), IsEmpty());
  EXPECT_GE(Judged("reported"), 8);
  EXPECT_EQ(Judged("deadline"), 0);

  const absl::Time first_dead_window = next_start_;
  RunReported(2, "a3/mlx5_1");  // raise_after: two windows
  weft::v1::PingmeshStatus status = manager_->Status();
  ASSERT_THAT(status.verdicts(), SizeIs(1));
  EXPECT_THAT(status.verdicts(0).component(), HasSubstr("a3/mlx5_1"));
  // Named 1 ms after the second window's end: the lateness (500 ms) was not waited.
  EXPECT_EQ(clock_.Now(), first_dead_window + 2 * kWindow + absl::Milliseconds(1));
  EXPECT_EQ(Judged("deadline"), 0);
}

// A node that sends nothing (its agent dead, its stream cut) holds a window only until
// its lateness; a node that never says how far it is (an older agent) likewise.
TEST_F(PingmeshManagerTest, ASilentNodeHoldsAWindowOnlyUntilItsLateness) {
  manager_->Tick();
  RunReported(4);
  const double reported = Judged("reported");

  // Window [start, start + kWindow) is judged at its lateness, not before.
  auto expect_held_until_lateness = [&](absl::Time start) {
    const uint64_t accepted = manager_->Status().windows_accepted();
    clock_.Set(start + kWindow + kLateness - absl::Milliseconds(1));
    manager_->Tick();
    EXPECT_EQ(manager_->Status().windows_accepted(), accepted) << "judged before its lateness";
    clock_.Set(start + kWindow + kLateness);
    manager_->Tick();
    EXPECT_GT(manager_->Status().windows_accepted(), accepted);
  };
  // b8 silent for one window; the next it sends, but without saying how far it is.
  const absl::Time silent_window = next_start_;
  const absl::Time unsaid_window = silent_window + kWindow;
  ReportWindow(silent_window, "", /*say_through=*/true, /*silent=*/{"b8"});
  ReportWindow(unsaid_window, "", /*say_through=*/false);
  for (const auto& [node, list] : lists_) {
    if (node == "b8") continue;
    manager_->OnProbeWindows(node, {}, absl::ToUnixMicros(unsaid_window + kWindow));
  }
  const uint64_t accepted = manager_->Status().windows_accepted();
  clock_.Set(unsaid_window + kWindow + absl::Milliseconds(1));
  manager_->Tick();
  EXPECT_EQ(manager_->Status().windows_accepted(), accepted) << "judged without b8's report";
  expect_held_until_lateness(silent_window);
  expect_held_until_lateness(unsaid_window);
  EXPECT_EQ(Judged("deadline"), 2);
  EXPECT_EQ(Judged("reported"), reported);
}

// A node's word is never taken for a window that has not ended on the controller's
// clock (an agent's clock ahead).
TEST_F(PingmeshManagerTest, NoWindowIsJudgedBeforeItEndsOnTheControllersClock) {
  manager_->Tick();
  RunReported(2);
  const double reported = Judged("reported");
  for (const auto& [node, list] : lists_) {
    manager_->OnProbeWindows(node, {}, absl::ToUnixMicros(clock_.Now() + absl::Seconds(10)));
  }
  manager_->Tick();
  EXPECT_EQ(Judged("reported"), reported);
  clock_.Advance(kWindow);
  manager_->Tick();
  EXPECT_EQ(Judged("reported"), reported + 1);
}

// A sink that cannot take a node's findings yet (the node is not in the inventory) is
// offered them again after the next judged window, until it takes them.
TEST_F(PingmeshManagerTest, FindingsTheSinkRefusedAreOfferedAgain) {
  manager_->Tick();
  Run(8);
  refuse_findings_ = true;
  Run(4, "a3/mlx5_1");
  ASSERT_THAT(manager_->Status().verdicts(), SizeIs(1));
  EXPECT_THAT(findings_, IsEmpty());
  const int refused_calls = findings_calls_;
  EXPECT_GE(refused_calls, 1);
  Run(1, "a3/mlx5_1");
  EXPECT_GT(findings_calls_, refused_calls) << "offered again";
  refuse_findings_ = false;
  Run(1, "a3/mlx5_1");
  ASSERT_THAT(findings_["a3"], SizeIs(1));
  const int taken_calls = findings_calls_;
  Run(2, "a3/mlx5_1");
  EXPECT_EQ(findings_calls_, taken_calls) << "once taken, not offered again";
}

TEST_F(PingmeshManagerTest, WithoutDegradeBlamedNodesTheSinkIsNeverCalled) {
  PingmeshManagerOptions options;
  options.window = kWindow;
  options.lateness = kLateness;
  options.tor_uplinks = 2;
  options.degrade_blamed_nodes = false;
  manager_ = std::make_unique<PingmeshManager>(
      &clock_, [this] { return nodes_; },
      [this](const std::string& node, weft::v1::ControllerMessage message) {
        lists_[node] = message.pinglist();
        return absl::OkStatus();
      },
      &events_, &metrics_, options,
      [this](const std::string&, std::vector<Finding>) {
        ++findings_calls_;
        return absl::OkStatus();
      });
  manager_->Tick();
  Run(8);
  Run(4, "a3/mlx5_1");
  ASSERT_THAT(manager_->Status().verdicts(), SizeIs(1)) << "still judged and reported";
  EXPECT_EQ(findings_calls_, 0);
}

TEST_F(PingmeshManagerTest, LateAndUnknownWindowsAreCountedNotJudged) {
  manager_->Tick();
  Run(2);
  const absl::Time now = clock_.Now();
  // A window long judged, and a stream no pinglist has.
  google::protobuf::RepeatedPtrField<weft::v1::ProbeWindow> windows;
  weft::v1::ProbeWindow* old = windows.Add();
  old->set_peer_node("a2");
  old->set_window_start_us(absl::ToUnixMicros(now - absl::Seconds(10)));
  old->set_window_end_us(absl::ToUnixMicros(now - absl::Seconds(10) + kWindow));
  weft::v1::ProbeWindow* stranger = windows.Add();
  stranger->set_peer_node("zz9");
  stranger->set_peer_nic("mlx5_0");
  stranger->set_source_nic("mlx5_0");
  stranger->set_source_port(50000);
  stranger->set_sent(5);
  const int64_t start = absl::ToUnixMicros(now) / 250000 * 250000;
  stranger->set_window_start_us(start);
  stranger->set_window_end_us(start + 250000);
  manager_->OnProbeWindows("a1", windows);
  clock_.Set(absl::FromUnixMicros(start) + kWindow + kLateness);
  manager_->Tick();
  const weft::v1::PingmeshStatus status = manager_->Status();
  EXPECT_EQ(status.windows_late(), 1u);
  EXPECT_EQ(status.windows_unknown(), 1u);
}

TEST_F(PingmeshManagerTest, MatrixSumsRackToRackAndNodeToNode) {
  manager_->Tick();
  Run(10);
  absl::StatusOr<weft::v1::PingmeshMatrix> racks = manager_->Matrix("");
  ASSERT_TRUE(racks.ok()) << racks.status();
  ASSERT_THAT(racks->cells(), SizeIs(4));
  const weft::v1::PingmeshMatrixCell& ab = racks->cells(1);
  EXPECT_EQ(ab.source(), "rack-a");
  EXPECT_EQ(ab.destination(), "rack-b");
  EXPECT_GT(ab.sent(), 0u);
  EXPECT_EQ(ab.lost(), 0u);
  EXPECT_DOUBLE_EQ(ab.rtt_p99_us(), 30);
  EXPECT_DOUBLE_EQ(racks->cells(0).rtt_p99_us(), 14);
  EXPECT_GT(racks->end_us(), racks->start_us());

  absl::StatusOr<weft::v1::PingmeshMatrix> nodes = manager_->Matrix("rack-b");
  ASSERT_TRUE(nodes.ok());
  for (const auto& cell : nodes->cells()) EXPECT_EQ(cell.source()[0], 'b');
  EXPECT_EQ(manager_->Matrix("rack-z").status().code(), absl::StatusCode::kNotFound);

  // The rack gauges follow the last complete period.
  bool found = false;
  for (const auto& family : registry_.Collect()) {
    if (family.name == "weft_controller_pingmesh_rack_loss_ratio") found = family.metric.size() == 4;
  }
  EXPECT_TRUE(found);
}

TEST_F(PingmeshManagerTest, APreJobCheckFailsTheNodeWithADeadNicAndPassesTheRest) {
  manager_->Tick();
  Run(4);
  const uint64_t a1_routine = lists_.at("a1").version();
  std::optional<absl::StatusOr<weft::v1::CheckResponse>> answer;
  weft::v1::CheckRequest request;
  for (const char* node : {"a1", "a3", "b2", "b4", "zz9"}) request.add_nodes(node);
  request.set_seconds(3);
  ASSERT_TRUE(manager_->StartCheck(request, [&](absl::StatusOr<weft::v1::CheckResponse> r) {
                        answer = std::move(r);
                      }).ok());
  // The checked nodes now probe each other only: a1's NICs its rail peers among the four
  // and its other NIC.
  const weft::v1::Pinglist a1 = lists_.at("a1");  // a copy: the check's list
  EXPECT_GT(a1.version(), a1_routine);
  for (const weft::v1::ProbePeer& peer : a1.peers()) {
    EXPECT_THAT(std::vector<std::string>({"a1", "a3", "b2", "b4"}), ::testing::Contains(peer.node()));
  }
  // A second check of a node in this one waits; a node named twice is an error.
  weft::v1::CheckRequest overlapping;
  overlapping.add_nodes("b2");
  EXPECT_EQ(manager_->StartCheck(overlapping, [](auto) {}).code(),
            absl::StatusCode::kFailedPrecondition);
  weft::v1::CheckRequest twice;
  twice.add_nodes("a5");
  twice.add_nodes("a5");
  EXPECT_EQ(manager_->StartCheck(twice, [](auto) {}).code(), absl::StatusCode::kInvalidArgument);

  Run(24, "a3/mlx5_1");  // 6 s: the check's 3 s and the reports' lateness
  ASSERT_TRUE(answer.has_value());
  ASSERT_TRUE(answer->ok()) << answer->status();
  const weft::v1::CheckResponse& r = **answer;
  EXPECT_FALSE(r.passed());
  ASSERT_EQ(r.nodes_size(), 5);
  EXPECT_TRUE(r.nodes(0).passed()) << r.nodes(0).reason();
  EXPECT_GT(r.nodes(0).sent(), 0u);
  EXPECT_FALSE(r.nodes(1).passed());
  EXPECT_THAT(r.nodes(1).reason(), HasSubstr("a3/mlx5_1"));
  EXPECT_TRUE(r.nodes(2).passed()) << r.nodes(2).reason();
  EXPECT_TRUE(r.nodes(3).passed()) << r.nodes(3).reason();
  EXPECT_FALSE(r.nodes(4).passed());
  EXPECT_EQ(r.nodes(4).reason(), "not probed: not known to the controller");
  // Back to their routine lists, under a new version.
  EXPECT_GT(lists_.at("a1").version(), a1.version());
  EXPECT_GT(lists_.at("a1").peers_size(), a1.peers_size());

  // The same nodes, healthy: the check passes.
  answer.reset();
  weft::v1::CheckRequest healthy;
  for (const char* node : {"a1", "a3", "b2"}) healthy.add_nodes(node);
  healthy.set_seconds(2);
  ASSERT_TRUE(manager_->StartCheck(healthy, [&](absl::StatusOr<weft::v1::CheckResponse> r) {
                        answer = std::move(r);
                      }).ok());
  Run(20);
  ASSERT_TRUE(answer.has_value() && answer->ok());
  EXPECT_TRUE((*answer)->passed()) << (*answer)->DebugString();
}

// A check is judged as its nodes report, too: its answer comes as soon as its last
// window is in from every node probing, not its lateness later.
TEST_F(PingmeshManagerTest, ACheckAnswersAsSoonAsItsLastWindowIsIn) {
  manager_->Tick();
  RunReported(4);
  std::optional<absl::StatusOr<weft::v1::CheckResponse>> answer;
  weft::v1::CheckRequest request;
  for (const char* node : {"a1", "a3", "b2"}) request.add_nodes(node);
  request.set_seconds(1);
  const int64_t window_us = absl::ToInt64Microseconds(kWindow);
  const absl::Time check_end =
      absl::FromUnixMicros((absl::ToUnixMicros(clock_.Now()) / window_us + 1) * window_us) +
      absl::Seconds(1);
  ASSERT_TRUE(manager_->StartCheck(request, [&](absl::StatusOr<weft::v1::CheckResponse> r) {
                        answer = std::move(r);
                      }).ok());
  for (int i = 0; i < 20 && !answer.has_value(); ++i) RunReported(1, "a3/mlx5_1");
  ASSERT_TRUE(answer.has_value() && answer->ok());
  EXPECT_EQ(clock_.Now(), check_end + absl::Milliseconds(1));
  EXPECT_FALSE((*answer)->passed());
  EXPECT_THAT((*answer)->nodes(1).reason(), HasSubstr("a3/mlx5_1"));
  EXPECT_TRUE((*answer)->nodes(0).passed()) << (*answer)->nodes(0).reason();
  EXPECT_EQ(Judged("deadline"), 0);
}

TEST_F(PingmeshManagerTest, CancelledChecksAnswerWithTheReason) {
  manager_->Tick();
  std::optional<absl::Status> answer;
  weft::v1::CheckRequest request;
  request.add_nodes("a1");
  ASSERT_TRUE(manager_->StartCheck(request, [&](absl::StatusOr<weft::v1::CheckResponse> r) {
                        answer = r.status();
                      }).ok());
  manager_->CancelChecks(absl::UnavailableError("shutting down"));
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->code(), absl::StatusCode::kUnavailable);
  // Once cancelled for a shutdown, no new check starts.
  EXPECT_EQ(manager_->StartCheck(request, [](auto) {}).code(), absl::StatusCode::kUnavailable);
}

TEST_F(PingmeshManagerTest, ACheckWithNothingToProbeFails) {
  manager_->Tick();
  // One node whose two NICs are on different rails... still probe each other across
  // rails; a node unknown to the controller has nothing: the check must not pass.
  std::optional<absl::StatusOr<weft::v1::CheckResponse>> answer;
  weft::v1::CheckRequest request;
  request.add_nodes("zz1");
  request.set_seconds(1);
  ASSERT_TRUE(manager_->StartCheck(request, [&](absl::StatusOr<weft::v1::CheckResponse> r) {
                        answer = std::move(r);
                      }).ok());
  Run(12);
  ASSERT_TRUE(answer.has_value() && answer->ok());
  EXPECT_FALSE((*answer)->passed());
  EXPECT_EQ((*answer)->streams(), 0u);
  EXPECT_THAT((*answer)->nodes(0).reason(), HasSubstr("not probed"));
}

TEST(PingmeshManagerOptionsTest, RefusesBadOptionsByName) {
  PingmeshManagerOptions options;
  options.localiser.raise_after = 0;
  absl::Status refused = PingmeshManager::ValidateOptions(options);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("raise_after"));
  options = PingmeshManagerOptions();
  options.matrix_period = absl::Milliseconds(100);
  EXPECT_THAT(PingmeshManager::ValidateOptions(options).message(), HasSubstr("matrix_period"));
}

}  // namespace
}  // namespace weft::controller

namespace weft::controller {
namespace {

// Traces reach the resolver on the next tick: a valid one is accepted (and changes its
// stream's path), garbage and traces of streams no pinglist holds are refused, counted
// and dropped.
TEST_F(PingmeshManagerTest, TracesAreCheckedOnTheTickAndGarbageIsCountedAndDropped) {
  manager_->Tick();
  Run(2);
  const weft::v1::ProbePeer* across = nullptr;
  for (const weft::v1::ProbePeer& peer : lists_.at("a1").peers()) {
    if (peer.node()[0] == 'b' && across == nullptr) across = &peer;
  }
  ASSERT_NE(across, nullptr);
  google::protobuf::RepeatedPtrField<weft::v1::ProbePathTrace> traces;
  weft::v1::ProbePathTrace* good = traces.Add();
  good->set_peer_node(across->node());
  good->set_peer_nic(across->nic());
  good->set_source_nic(across->source_nic());
  good->set_source_port(across->source_ports(0));
  good->set_dscp(across->dscp());
  for (const char* hop : {"10.0.1.1", "10.100.0.1", "10.100.1.2"}) good->add_hops(hop);
  good->set_reached(true);
  weft::v1::ProbePathTrace* bad = traces.Add();
  *bad = *good;
  bad->set_hops(1, "<script>");
  weft::v1::ProbePathTrace* wide = traces.Add();
  *wide = *good;
  wide->set_source_port(70000);
  // A well-formed trace of a stream no pinglist holds: refused, nothing learnt from it.
  weft::v1::ProbePathTrace* stranger = traces.Add();
  *stranger = *good;
  stranger->set_peer_node("zz9");
  manager_->OnProbeTraces("a1", traces);
  auto count = [&](const char* result) {
    return MetricValue(registry_, "weft_controller_pingmesh_traces_total", {{"result", result}})
        .value_or(-1);
  };
  EXPECT_EQ(count("accepted"), 0);  // queued until the tick
  Run(1);
  EXPECT_EQ(count("accepted"), 1);
  EXPECT_EQ(count("path_changed"), 1);
  EXPECT_EQ(count("refused"), 3);
  // The same trace again changes nothing.
  traces.DeleteSubrange(1, 3);
  manager_->OnProbeTraces("a1", traces);
  Run(1);
  EXPECT_EQ(count("accepted"), 2);
  EXPECT_EQ(count("path_changed"), 1);
}

TEST(PingmeshManagerOptionsTest, SwitchesComeFromTheConfigAndAreChecked) {
  weft::v1::PingmeshConfig config;
  weft::v1::PingmeshSwitch* spine = config.add_switches();
  spine->set_name("spine-0");
  spine->add_addresses("10.100.0.1");
  spine->add_addresses("10.100.1.1");
  PingmeshManagerOptions options = PingmeshManagerOptions::FromConfig(config, absl::Seconds(1));
  ASSERT_EQ(options.switches.size(), 1u);
  EXPECT_THAT(options.switches[0].addresses, ElementsAre("10.100.0.1", "10.100.1.1"));
  EXPECT_TRUE(PingmeshManager::ValidateOptions(options).ok());
  options.switches.push_back({"spine-1", {"10.100.1.1"}});
  EXPECT_THAT(PingmeshManager::ValidateOptions(options).message(),
              HasSubstr("claimed by both spine-0 and spine-1"));
}

}  // namespace
}  // namespace weft::controller
