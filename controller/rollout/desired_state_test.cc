#include "controller/rollout/desired_state.h"

#include <set>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace weft::controller {
namespace {

// Records every send; nodes in `connected` have a stream.
struct FakeStreams {
  std::vector<std::pair<std::string, weft::v1::DesiredState>> sent;
  std::set<std::string> connected;

  DesiredStateManager::Sender AsSender() {
    return [this](const std::string& node, weft::v1::ControllerMessage message) {
      if (!connected.count(node)) return absl::NotFoundError("no stream");
      sent.emplace_back(node, message.desired_state());
      return absl::OkStatus();
    };
  }
};

weft::v1::DesiredState State(const std::string& node, uint64_t version, uint32_t ai_rate = 5) {
  weft::v1::DesiredState state;
  state.set_node_name(node);
  state.set_version(version);
  state.mutable_dcqcn()->set_rp_ai_rate(ai_rate);
  return state;
}

weft::v1::DesiredStateAck Ack(const weft::v1::DesiredState& sent, bool accepted) {
  weft::v1::DesiredStateAck ack;
  ack.set_version(sent.version());
  ack.set_nonce(sent.nonce());
  ack.set_accepted(accepted);
  if (!accepted) {
    weft::v1::ParameterError* e = ack.add_errors();
    e->set_device("mlx5_0");
    e->set_parameter("rp_ai_rate");
    e->set_value("5");
    e->set_reason("write failed");
  }
  return ack;
}

class DesiredStateTest : public ::testing::Test {
 protected:
  DesiredStateTest()
      : metrics_(registry_), manager_(&clock_, &metrics_, streams_.AsSender(), absl::Seconds(30)) {}

  double Nodes(const std::string& status) {
    return MetricValue(registry_, "weft_controller_desired_state_nodes", {{"status", status}})
        .value_or(-1);
  }

  FakeClock clock_;
  prometheus::Registry registry_;
  RolloutMetrics metrics_;
  FakeStreams streams_;
  DesiredStateManager manager_;
};

TEST_F(DesiredStateTest, SendsToAConnectedNodeAndAckMakesItInSync) {
  streams_.connected.insert("n1");
  ASSERT_TRUE(manager_.SetDesired(State("n1", 3)).ok());
  ASSERT_EQ(streams_.sent.size(), 1u);
  EXPECT_EQ(streams_.sent[0].second.version(), 3u);
  EXPECT_FALSE(streams_.sent[0].second.nonce().empty());
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kPending);
  EXPECT_EQ(Nodes("pending"), 1);
  EXPECT_EQ(MetricValue(registry_, "weft_controller_desired_state_version"), 3);

  manager_.OnDesiredStateAck("n1", Ack(streams_.sent[0].second, true));
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kInSync);
  EXPECT_EQ(manager_.Get("n1")->applied_version, 3u);
  EXPECT_EQ(Nodes("pending"), 0);
  EXPECT_EQ(Nodes("in_sync"), 1);
}

TEST_F(DesiredStateTest, AnswerWithAnOldNonceIsIgnored) {
  streams_.connected.insert("n1");
  ASSERT_TRUE(manager_.SetDesired(State("n1", 1)).ok());
  const weft::v1::DesiredState first = streams_.sent.back().second;
  ASSERT_TRUE(manager_.SetDesired(State("n1", 2)).ok());
  manager_.OnDesiredStateAck("n1", Ack(first, true));
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kPending);
  weft::v1::DesiredStateAck wrong_nonce = Ack(streams_.sent.back().second, true);
  wrong_nonce.set_nonce("other");
  manager_.OnDesiredStateAck("n1", wrong_nonce);
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kPending);
}

TEST_F(DesiredStateTest, NackKeepsTheErrors) {
  streams_.connected.insert("n1");
  ASSERT_TRUE(manager_.SetDesired(State("n1", 1)).ok());
  manager_.OnDesiredStateAck("n1", Ack(streams_.sent.back().second, false));
  const NodeSync sync = *manager_.Get("n1");
  EXPECT_EQ(sync.status, SyncStatus::kNacked);
  EXPECT_EQ(sync.nacked_version, 1u);
  ASSERT_EQ(sync.nack_errors.size(), 1u);
  EXPECT_EQ(sync.nack_errors[0].parameter(), "rp_ai_rate");
  EXPECT_EQ(Nodes("nacked"), 1);
  // A reconnect does not push a refused version again.
  manager_.OnStreamAttached("n1", 0);
  EXPECT_EQ(streams_.sent.size(), 1u);
}

TEST_F(DesiredStateTest, NodeWithoutStreamGetsItWhenItConnects) {
  ASSERT_TRUE(manager_.SetDesired(State("n1", 4)).ok());
  EXPECT_TRUE(streams_.sent.empty());
  EXPECT_EQ(manager_.Get("n1")->sent_at, absl::InfinitePast());
  streams_.connected.insert("n1");
  manager_.OnStreamAttached("n1", 0);
  ASSERT_EQ(streams_.sent.size(), 1u);
  EXPECT_EQ(streams_.sent[0].second.version(), 4u);
}

TEST_F(DesiredStateTest, ReconnectWithTheDesiredVersionIsInSyncWithoutAResend) {
  streams_.connected.insert("n1");
  ASSERT_TRUE(manager_.SetDesired(State("n1", 4)).ok());
  manager_.OnStreamAttached("n1", 4);
  EXPECT_EQ(streams_.sent.size(), 1u);
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kInSync);
  // An agent restarted without state: sent again, with a new nonce.
  manager_.OnStreamAttached("n1", 0);
  ASSERT_EQ(streams_.sent.size(), 2u);
  EXPECT_NE(streams_.sent[0].second.nonce(), streams_.sent[1].second.nonce());
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kPending);
}

TEST_F(DesiredStateTest, DriftResendsAtMostOncePerInterval) {
  streams_.connected.insert("n1");
  ASSERT_TRUE(manager_.SetDesired(State("n1", 2)).ok());
  manager_.OnDesiredStateAck("n1", Ack(streams_.sent.back().second, true));
  weft::v1::TunablesStatus status;
  status.set_applied_version(2);
  weft::v1::TunableDrift* drift = status.add_drift();
  drift->set_device("mlx5_0");
  drift->set_parameter("rp_ai_rate");
  drift->set_expected("5");
  drift->set_actual("7");
  manager_.OnTunablesStatus("n1", status);
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kDrifted);
  EXPECT_EQ(streams_.sent.size(), 2u);
  EXPECT_EQ(MetricValue(registry_, "weft_controller_tunables_drift_nodes"), 1);
  EXPECT_EQ(Nodes("drifted"), 1);
  clock_.Advance(absl::Seconds(10));
  manager_.OnTunablesStatus("n1", status);
  EXPECT_EQ(streams_.sent.size(), 2u);
  clock_.Advance(absl::Seconds(25));
  manager_.OnTunablesStatus("n1", status);
  EXPECT_EQ(streams_.sent.size(), 3u);
  // The agent fixed it.
  status.clear_drift();
  manager_.OnTunablesStatus("n1", status);
  EXPECT_EQ(manager_.Get("n1")->status, SyncStatus::kInSync);
  EXPECT_EQ(MetricValue(registry_, "weft_controller_tunables_drift_nodes"), 0);
  EXPECT_EQ(Nodes("drifted"), 0);
}

TEST_F(DesiredStateTest, LastGoodAndAdopt) {
  streams_.connected.insert("n1");
  ASSERT_TRUE(manager_.SetDesired(State("n1", 2)).ok());
  manager_.MarkGood("n1", 2);
  EXPECT_EQ(manager_.Get("n1")->last_good_version, 2u);
  // A known node is not adopted.
  EXPECT_FALSE(manager_.Adopt(State("n1", 9), 9));
  EXPECT_EQ(manager_.Get("n1")->desired.version(), 2u);

  // After a controller restart: n2's agent already has version 7, n3's has 5.
  streams_.connected.insert("n2");
  streams_.connected.insert("n3");
  manager_.OnStreamAttached("n2", 7);
  manager_.OnStreamAttached("n3", 5);
  const size_t sent_before = streams_.sent.size();
  EXPECT_TRUE(manager_.Adopt(State("n2", 7), 7));
  EXPECT_EQ(manager_.Get("n2")->status, SyncStatus::kInSync);
  EXPECT_EQ(streams_.sent.size(), sent_before);
  EXPECT_TRUE(manager_.Adopt(State("n3", 7), 5));
  EXPECT_EQ(manager_.Get("n3")->status, SyncStatus::kPending);
  ASSERT_EQ(streams_.sent.size(), sent_before + 1);
  EXPECT_EQ(streams_.sent.back().first, "n3");
  EXPECT_EQ(manager_.Get("n3")->last_good_version, 5u);
  EXPECT_EQ(manager_.newest_version(), 7u);
  EXPECT_EQ(Nodes("pending"), 2);  // n1 never answered, n3 just sent
  EXPECT_EQ(Nodes("in_sync"), 1);
}

TEST_F(DesiredStateTest, RefusesAStateWithoutNodeOrVersion) {
  EXPECT_EQ(manager_.SetDesired(State("", 1)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager_.SetDesired(State("n1", 0)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(manager_.Get("n1").has_value());
}

}  // namespace
}  // namespace weft::controller
