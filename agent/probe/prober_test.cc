#include "agent/probe/prober.h"

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "absl/time/clock.h"
#include "agent/probe/fake_transport.h"
#include "common/fake_clock.h"
#include "common/testing/metrics.h"
#include "gtest/gtest.h"

namespace weft::agent::probe {
namespace {

constexpr absl::Duration kWait = absl::Seconds(10);
// On the window grid (a multiple of 10 s), so the first window starts with the test.
const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

weft::v1::ProbePeer* AddPeer(weft::v1::Pinglist* list, const std::string& node,
                             const std::string& address, std::vector<uint32_t> ports,
                             double rate) {
  weft::v1::ProbePeer* peer = list->add_peers();
  peer->set_node(node);
  peer->set_nic("mlx5_0");
  peer->set_address(address);
  peer->set_udp_port(7412);
  for (uint32_t port : ports) peer->add_source_ports(port);
  peer->set_probes_per_second(rate);
  peer->set_dscp(26);
  return peer;
}

weft::v1::Pinglist List(uint64_t version) {
  weft::v1::Pinglist list;
  list.set_version(version);
  list.set_window_ms(10000);
  list.set_timeout_ms(500);
  return list;
}

class ProberTest : public ::testing::Test {
 protected:
  ProberTest() : clock_(kStart), transport_(&clock_) {}

  void Make(double max_probes_per_second = 1000,
            std::function<void()> on_windows_closed = nullptr,
            absl::Duration send_ahead = absl::ZeroDuration()) {
    ProberOptions options;
    options.send_ahead = send_ahead;
    options.on_windows_closed = std::move(on_windows_closed);
    options.node_name = "node-a";
    options.max_probes_per_second = max_probes_per_second;
    options.max_cpu_share = 1.0;  // the CPU budget has its own test
    prober_ = std::make_unique<Prober>(&transport_, std::map<std::string, ProbeTransport*>{}, &clock_,
                                       options, &registry_);
  }

  // Steps the fake clock to `until`, each step once the sender waits again and every
  // reply sent so far was taken in.
  void RunUntil(absl::Time until) {
    while (clock_.Now() < until) {
      ASSERT_TRUE(clock_.AwaitWaiters(1, kWait));
      ASSERT_TRUE(AwaitAnswered());
      std::optional<absl::Time> next = clock_.NextDeadline();
      ASSERT_TRUE(next.has_value());
      clock_.Set(std::min(*next, until));
    }
    ASSERT_TRUE(clock_.AwaitWaiters(1, kWait));
  }

  // Every probe to an answering peer has been resolved by the receiver.
  bool AwaitAnswered() {
    const absl::Time limit = absl::Now() + kWait;
    while (absl::Now() < limit) {
      size_t pending_answered = 0;
      for (uint16_t port : answering_ports_) pending_answered += prober_->in_flight(port);
      if (pending_answered == 0) return true;
      absl::SleepFor(absl::Microseconds(200));
    }
    return false;
  }

  std::optional<double> Metric(absl::string_view name) {
    return MetricValue(registry_, name, {{"node", "node-a"}});
  }

  FakeClock clock_;
  FakeTransport transport_;
  prometheus::Registry registry_;
  std::unique_ptr<Prober> prober_;
  std::vector<uint16_t> answering_ports_;
};

TEST_F(ProberTest, ProbesEachFlowAtItsRateAndReportsWindows) {
  Make();
  weft::v1::Pinglist list = List(7);
  AddPeer(&list, "node-b", "10.0.0.2", {50001, 50002}, 20);  // 10/s per source port
  AddPeer(&list, "node-c", "10.0.0.3", {50003}, 5);
  answering_ports_ = {50001, 50002, 50003};
  transport_.SetMeasurement(absl::Microseconds(12), absl::Microseconds(4), absl::Microseconds(3));
  ASSERT_TRUE(prober_->Apply(list).ok());
  EXPECT_DOUBLE_EQ(prober_->scheduled_rate(), 25);
  prober_->Start();
  RunUntil(kStart + absl::Seconds(11));  // window 0 closes at 10.5 s
  std::vector<weft::v1::ProbeWindow> windows = prober_->TakeWindows();
  prober_->Stop();

  std::map<uint32_t, size_t> sends;
  for (const auto& s : transport_.sent()) {
    if (s.at < kStart + absl::Seconds(10)) ++sends[s.flow.source_port];
    EXPECT_EQ(s.flow.dscp, 26);
  }
  EXPECT_EQ(sends[50001], 100u);
  EXPECT_EQ(sends[50002], 100u);
  EXPECT_EQ(sends[50003], 50u);
  ASSERT_EQ(windows.size(), 3u);
  for (const weft::v1::ProbeWindow& w : windows) {
    SCOPED_TRACE(w.ShortDebugString());
    EXPECT_EQ(w.sent(), sends[w.source_port()]);
    EXPECT_EQ(w.lost(), 0u);
    EXPECT_DOUBLE_EQ(w.rtt_p50_us(), 12);
    EXPECT_DOUBLE_EQ(w.sender_host_delay_us(), 4);
    // ACK2's responder delay (3 µs), not ACK1's rougher guess.
    EXPECT_DOUBLE_EQ(w.responder_host_delay_us(), 3);
    EXPECT_EQ(w.timestamps(), "software");
    EXPECT_EQ(w.pinglist_version(), 7u);
    EXPECT_EQ(w.window_start_us(), absl::ToUnixMicros(kStart));
  }
  EXPECT_EQ(Metric("weft_agent_probes_sent_total"), static_cast<double>(transport_.sent().size()));
  EXPECT_EQ(transport_.sent().size(), 275u);  // 25/s for 11 s
  EXPECT_EQ(Metric("weft_agent_probes_lost_total"), 0.0);
  EXPECT_EQ(Metric("weft_agent_probe_rate"), 25.0);
  EXPECT_EQ(Metric("weft_agent_pinglist_version"), 7.0);
  EXPECT_GT(Metric("weft_agent_prober_cpu_seconds_total").value_or(0), 0.0);
}

TEST_F(ProberTest, UnansweredProbesAreLostAtTheirTimeout) {
  Make();
  weft::v1::Pinglist list = List(1);
  AddPeer(&list, "node-b", "10.0.0.2", {50001}, 10);
  AddPeer(&list, "node-dead", "10.0.0.9", {50009}, 10);
  transport_.Drop("10.0.0.9");
  answering_ports_ = {50001};
  ASSERT_TRUE(prober_->Apply(list).ok());
  prober_->Start();
  RunUntil(kStart + absl::Seconds(11));  // window 0 closes at 10.5 s
  std::vector<weft::v1::ProbeWindow> windows = prober_->TakeWindows();
  prober_->Stop();
  ASSERT_EQ(windows.size(), 2u);
  for (const weft::v1::ProbeWindow& w : windows) {
    EXPECT_EQ(w.sent(), 100u);
    EXPECT_EQ(w.lost(), w.peer_node() == "node-dead" ? 100u : 0u) << w.ShortDebugString();
  }
  // The window's 100, and the 5 sent in [10 s, 10.5 s) whose timeout ran out by 11 s.
  EXPECT_EQ(Metric("weft_agent_probes_lost_total"), 105.0);
  EXPECT_GE(transport_.forgotten(), 100u);  // the transport stops waiting for them
}

// Windows are announced the moment their probes are resolved (their end plus the
// timeout), lost ones included: a dead peer's windows come as soon as the others, and
// the prober says how far every window is out.
TEST_F(ProberTest, AnnouncesWindowsAsTheyCloseAndHowFarTheyAreOut) {
  struct Announced {
    absl::Time at;
    std::vector<weft::v1::ProbeWindow> windows;
    absl::Time through;
  };
  absl::Mutex mu;
  std::vector<Announced> announced;
  // Takes the windows from inside the callback: it runs without the prober's lock.
  Make(1000, [&] {
    Announced a;
    a.at = clock_.Now();
    a.windows = prober_->TakeWindows(&a.through);
    absl::MutexLock lock(&mu);
    announced.push_back(std::move(a));
  });
  weft::v1::Pinglist list = List(1);  // 10 s windows, 500 ms timeout
  AddPeer(&list, "node-b", "10.0.0.2", {50001}, 10);
  AddPeer(&list, "node-dead", "10.0.0.9", {50009}, 10);
  transport_.Drop("10.0.0.9");
  answering_ports_ = {50001};
  ASSERT_TRUE(prober_->Apply(list).ok());
  absl::Time through = absl::UnixEpoch();
  EXPECT_TRUE(prober_->TakeWindows(&through).empty());
  EXPECT_EQ(through, absl::InfinitePast());  // nothing closed yet
  prober_->Start();
  RunUntil(kStart + absl::Seconds(10) + absl::Milliseconds(499));
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(announced.empty()) << "announced before the window's probes were resolved";
  }
  EXPECT_TRUE(prober_->TakeWindows(&through).empty());
  EXPECT_LT(through, kStart + absl::Seconds(10));
  RunUntil(kStart + absl::Seconds(12));
  prober_->Stop();
  absl::MutexLock lock(&mu);
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].at, kStart + absl::Milliseconds(10500));
  EXPECT_EQ(announced[0].through, kStart + absl::Seconds(10));
  ASSERT_EQ(announced[0].windows.size(), 2u);
  for (const weft::v1::ProbeWindow& w : announced[0].windows) {
    EXPECT_EQ(w.window_end_us(), absl::ToUnixMicros(kStart + absl::Seconds(10)));
    EXPECT_EQ(w.lost(), w.peer_node() == "node-dead" ? 100u : 0u) << w.ShortDebugString();
  }
  // Later, with nothing new: the mark moves on, every window up to it already out.
  EXPECT_TRUE(prober_->TakeWindows(&through).empty());
  EXPECT_GE(through, kStart + absl::Seconds(11));
}

TEST_F(ProberTest, NodeCapHoldsWhateverThePinglistAsks) {
  Make(/*max_probes_per_second=*/50);
  weft::v1::Pinglist list = List(1);
  for (int i = 0; i < 20; ++i) {
    AddPeer(&list, "node-" + std::to_string(i), "10.0.1." + std::to_string(i),
            {static_cast<uint32_t>(50000 + i)}, 100);  // 2000/s asked
    answering_ports_.push_back(static_cast<uint16_t>(50000 + i));
  }
  ASSERT_TRUE(prober_->Apply(list).ok());
  EXPECT_DOUBLE_EQ(prober_->scheduled_rate(), 50);
  prober_->Start();
  RunUntil(kStart + absl::Seconds(4));
  prober_->Stop();
  std::vector<FakeTransport::SentProbe> sent = transport_.sent();
  // 4 s at 50/s, and no one-second span above the cap (+1 for a span's two ends).
  EXPECT_NEAR(static_cast<double>(sent.size()), 200, 1);
  size_t j = 0;
  for (size_t i = 0; i < sent.size(); ++i) {
    while (sent[i].at - sent[j].at >= absl::Seconds(1)) ++j;
    EXPECT_LE(i - j + 1, 51u);
  }
}

TEST_F(ProberTest, NewPinglistReplacesTheOldAndBadOneChangesNothing) {
  Make();
  weft::v1::Pinglist first = List(1);
  AddPeer(&first, "node-b", "10.0.0.2", {50001}, 10);
  answering_ports_ = {50001, 50002};
  ASSERT_TRUE(prober_->Apply(first).ok());
  prober_->Start();
  RunUntil(kStart + absl::Seconds(2));

  weft::v1::Pinglist bad = List(2);
  AddPeer(&bad, "node-c", "10.0.0.3", {50002}, 10)->set_dscp(64);
  absl::Status refused = prober_->Apply(bad);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("dscp"), std::string::npos) << refused;
  EXPECT_EQ(prober_->pinglist_version(), 1u);

  weft::v1::Pinglist second = List(3);
  AddPeer(&second, "node-c", "10.0.0.3", {50002}, 10);
  ASSERT_TRUE(prober_->Apply(second).ok());
  const absl::Time switched = clock_.Now();
  RunUntil(kStart + absl::Seconds(4));
  prober_->Stop();
  for (const auto& s : transport_.sent()) {
    EXPECT_EQ(s.flow.peer_node, s.at < switched ? "node-b" : "node-c");
  }
  EXPECT_EQ(prober_->pinglist_version(), 3u);
}

TEST_F(ProberTest, FlowThatCannotSendReportsItsError) {
  Make();
  weft::v1::Pinglist list = List(1);
  AddPeer(&list, "node-b", "10.0.0.2", {50001}, 10);
  transport_.FailSourcePort(50001);
  weft::v1::ProbePeer* ud = AddPeer(&list, "node-c", "10.0.0.3", {50002}, 10);
  ud->set_transport(weft::v1::PROBE_TRANSPORT_RDMA_UD);
  ud->set_gid("0000:0000:0000:0000:0000:ffff:0a00:0003");
  ud->set_ud_qpn(77);
  ASSERT_TRUE(prober_->Apply(list).ok());
  prober_->Start();
  RunUntil(kStart + absl::Seconds(11));  // window 0 closes at 10.5 s
  std::vector<weft::v1::ProbeWindow> windows = prober_->TakeWindows();
  prober_->Stop();
  ASSERT_EQ(windows.size(), 2u);
  for (const weft::v1::ProbeWindow& w : windows) {
    EXPECT_EQ(w.sent(), 0u);
    EXPECT_NE(w.error(), "");
  }
  EXPECT_NE(windows[0].error().find("Address already in use"), std::string::npos);
  EXPECT_NE(windows[1].error().find("rdma_ud probing is unavailable from NIC ''"),
            std::string::npos);
  EXPECT_EQ(Metric("weft_agent_probe_send_errors_total"), 220.0);  // 2 flows × 10/s × 11 s
}

TEST(ValidatePinglistTest, RefusesWhatTheProberCannotDoNamingThePeer) {
  weft::v1::Pinglist list = List(1);
  weft::v1::ProbePeer* peer = AddPeer(&list, "node-b", "10.0.0.2", {1234}, 10);
  EXPECT_TRUE(ValidatePinglist(list, 100).ok());
  peer->set_transport(weft::v1::PROBE_TRANSPORT_RDMA_UD);
  peer->set_gid("0000:0000:0000:0000:0000:ffff:0a00:0002");
  peer->set_ud_qpn(9);
  absl::Status status = ValidatePinglist(list, 100);
  EXPECT_EQ(status.message(),
            "pinglist: peers[0] (node 'node-b' 10.0.0.2) field 'source_ports': value '1234' "
            "cannot be chosen by a RoCE v2 flow label; accepted: 49152..65535 for rdma_ud");
  peer->set_source_ports(0, 49152);
  EXPECT_TRUE(ValidatePinglist(list, 100).ok());
  peer->set_ud_qpn(0);
  EXPECT_NE(ValidatePinglist(list, 100).message().find("ud_qpn"), std::string::npos);
  peer->set_ud_qpn(9);
  peer->set_probes_per_second(5000);
  EXPECT_NE(ValidatePinglist(list, 100).message().find("probes_per_second"), std::string::npos);
  peer->set_probes_per_second(10);
  EXPECT_NE(ValidatePinglist(list, 0).message().find("at most 0"), std::string::npos);
  list.set_window_ms(10);
  EXPECT_NE(ValidatePinglist(list, 100).message().find("window_ms"), std::string::npos);
}

TEST_F(ProberTest, ProbesDueWithinSendAheadGoOutOnOneWakeAtTheSameRate) {
  Make(1000, nullptr, absl::Milliseconds(5));
  weft::v1::Pinglist list = List(3);
  // 8 source ports at 50/s each: 400 probes/s, one due every 2.5 ms on average.
  AddPeer(&list, "node-b", "10.0.0.2", {50001, 50002, 50003, 50004, 50005, 50006, 50007, 50008},
          400);
  answering_ports_ = {50001, 50002, 50003, 50004, 50005, 50006, 50007, 50008};
  ASSERT_TRUE(prober_->Apply(list).ok());
  prober_->Start();
  RunUntil(kStart + absl::Seconds(2));
  prober_->Stop();
  std::set<absl::Time> wakes;
  size_t sends = 0;
  for (const auto& sent : transport_.sent()) {
    if (sent.at >= kStart + absl::Seconds(1)) continue;
    ++sends;
    wakes.insert(sent.at);
  }
  EXPECT_EQ(sends, 400u) << "the rate is the schedule's, not the wakes'";
  // Every wake sends what is due within 5 ms: 2 probes a wake on average, not 1.
  EXPECT_LE(wakes.size(), sends / 2 + 1);
}

}  // namespace
}  // namespace weft::agent::probe
