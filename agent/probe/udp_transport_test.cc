#include "agent/probe/udp_transport.h"

#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/probe/prober.h"
#include "common/fake_clock.h"
#include "gtest/gtest.h"

namespace weft::agent::probe {
namespace {

constexpr absl::Duration kWait = absl::Seconds(10);

// Receives until `seqs` all have their final (ACK2) measurement or kWait passes.
std::map<uint64_t, ProbeMeasurement> ReceiveFinal(UdpProber& prober, size_t count) {
  std::map<uint64_t, ProbeMeasurement> final;
  const absl::Time deadline = absl::Now() + kWait;
  while (final.size() < count && absl::Now() < deadline) {
    for (ProbeMeasurement& m : prober.Receive(absl::Milliseconds(100))) {
      if (m.final) final[m.seq] = m;
    }
  }
  return final;
}

ProbeFlow LoopbackFlow(uint16_t responder_port, uint16_t source_port, uint8_t dscp) {
  ProbeFlow flow;
  flow.peer_node = "peer";
  flow.peer_address = "127.0.0.1";
  flow.peer_port = responder_port;
  flow.source_address = "127.0.0.1";
  flow.source_port = source_port;
  flow.dscp = dscp;
  return flow;
}

// A free UDP port on loopback (bound and released).
uint16_t FreeUdpPort() {
  absl::StatusOr<std::unique_ptr<UdpResponder>> probe = UdpResponder::Start("127.0.0.1", 0);
  return probe.ok() ? (*probe)->port() : 0;
}

TEST(UdpTransportTest, ProbesAreAnsweredTwiceWithKernelTimestampsPortAndDscpHonoured) {
  absl::StatusOr<std::unique_ptr<UdpResponder>> responder = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(responder.ok()) << responder.status();
  absl::StatusOr<std::unique_ptr<UdpProber>> prober = UdpProber::Create();
  ASSERT_TRUE(prober.ok()) << prober.status();

  const uint16_t sport_a = FreeUdpPort();
  const uint16_t sport_b = FreeUdpPort();
  ASSERT_NE(sport_a, 0);
  ASSERT_NE(sport_b, 0);
  const ProbeFlow a = LoopbackFlow((*responder)->port(), sport_a, 26);
  const ProbeFlow b = LoopbackFlow((*responder)->port(), sport_b, 48);
  for (uint64_t seq = 1; seq <= 20; ++seq) {
    ASSERT_TRUE((*prober)->Send(seq % 2 ? a : b, seq).ok());
  }
  std::map<uint64_t, ProbeMeasurement> got = ReceiveFinal(**prober, 20);
  ASSERT_EQ(got.size(), 20u);
  EXPECT_EQ((*responder)->probes_answered(), 20u);
  // The source port is the one the flow names, as getsockname and the responder's
  // recvfrom saw it.
  EXPECT_EQ((*prober)->LocalAddressOf(a), absl::StrCat("127.0.0.1:", sport_a));
  EXPECT_EQ((*prober)->LocalAddressOf(b), absl::StrCat("127.0.0.1:", sport_b));
  for (const auto& [seq, m] : got) {
    SCOPED_TRACE(absl::StrCat("seq ", seq));
    const ProbeFlow& flow = seq % 2 ? a : b;
    EXPECT_EQ(m.source_port_at_responder, flow.source_port);
    // The responder read the DSCP with IP_RECVTOS.
    EXPECT_EQ(m.dscp_at_responder, flow.dscp);
    // Loopback has kernel stamps on both ends (no NIC: no hardware stamps).
    EXPECT_EQ(m.timestamps, TimestampSource::kSoftware);
    // The network part of a loopback round trip is small but not zero, and every part
    // is non-negative and bounded.
    EXPECT_GT(m.network_rtt, absl::ZeroDuration());
    EXPECT_LT(m.network_rtt, absl::Milliseconds(100));
    EXPECT_GE(m.responder_host_delay, absl::ZeroDuration());
    EXPECT_LT(m.responder_host_delay, absl::Milliseconds(100));
    EXPECT_GE(m.sender_host_delay, absl::ZeroDuration());
  }
}

// Traceroute on loopback: no router, so TTL 1 already reaches the responder, which
// answers the trace packet as a probe; a closed port answers with ICMP port unreachable
// (read from the error queue); a probe sent right after that error still goes out.
TEST(UdpTransportTest, TracesReachTheResponderAndHearAClosedPortsIcmp) {
  absl::StatusOr<std::unique_ptr<UdpResponder>> responder = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(responder.ok()) << responder.status();
  absl::StatusOr<std::unique_ptr<UdpProber>> prober = UdpProber::Create();
  ASSERT_TRUE(prober.ok()) << prober.status();
  const uint16_t sport = FreeUdpPort();
  const uint16_t closed = FreeUdpPort();
  ASSERT_NE(sport, 0);
  ASSERT_NE(closed, 0);
  const ProbeFlow open_flow = LoopbackFlow((*responder)->port(), sport, 26);
  const ProbeFlow closed_flow = LoopbackFlow(closed, sport, 26);
  ASSERT_TRUE((*prober)->SendTrace(open_flow, 7, 1).ok());
  ASSERT_TRUE((*prober)->SendTrace(open_flow, 7, 2).ok());
  ASSERT_TRUE((*prober)->SendTrace(closed_flow, 8, 3).ok());
  // The port-unreachable is queued by now: this send meets it, and is sent again.
  ASSERT_TRUE((*prober)->Send(open_flow, 1).ok());
  EXPECT_FALSE((*prober)->SendTrace(open_flow, 7, 0).ok());
  EXPECT_FALSE((*prober)->SendTrace(open_flow, kMaxTraceToken + 1, 1).ok());

  std::map<std::pair<uint64_t, int>, TraceReply> replies;
  bool measured = false;
  const absl::Time deadline = absl::Now() + kWait;
  while ((replies.size() < 3 || !measured) && absl::Now() < deadline) {
    for (const ProbeMeasurement& m : (*prober)->Receive(absl::Milliseconds(100))) {
      if (m.seq == 1 && m.final) measured = true;
    }
    for (TraceReply& r : (*prober)->TakeTraceReplies()) {
      replies.emplace(std::make_pair(r.token, r.ttl), r);
    }
  }
  ASSERT_EQ(replies.size(), 3u);
  for (const auto& [key, reply] : replies) {
    EXPECT_TRUE(reply.reached) << key.first << "/" << key.second;
    EXPECT_EQ(reply.router, "");
  }
  EXPECT_TRUE(replies.count({7, 1}) && replies.count({7, 2}) && replies.count({8, 3}));
  EXPECT_TRUE(measured) << "the probe after the ICMP error was not answered";
}

TEST(UdpTransportTest, SourcePortInUseIsAnErrorNamingIt) {
  absl::StatusOr<std::unique_ptr<UdpResponder>> taken = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(taken.ok());
  absl::StatusOr<std::unique_ptr<UdpProber>> prober = UdpProber::Create();
  ASSERT_TRUE(prober.ok());
  absl::Status sent = (*prober)->Send(LoopbackFlow(9, (*taken)->port(), 0), 1);
  EXPECT_EQ(sent.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(sent.message().find(absl::StrCat("bind 127.0.0.1:", (*taken)->port())),
            std::string::npos)
      << sent;
  EXPECT_NE(sent.message().find("Address already in use"), std::string::npos) << sent;
  EXPECT_EQ((*prober)->Send(LoopbackFlow(9, 0, 0), 2).ok(), true);
  EXPECT_EQ((*prober)->Send([] {
                              ProbeFlow f = LoopbackFlow(9, 0, 0);
                              f.peer_address = "gpu-b01";
                              return f;
                            }(),
                            3)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UdpTransportTest, ResponderPortInUseIsRefusedWithTheAddress) {
  absl::StatusOr<std::unique_ptr<UdpResponder>> first = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(first.ok());
  absl::StatusOr<std::unique_ptr<UdpResponder>> second =
      UdpResponder::Start("127.0.0.1", (*first)->port());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(absl::StrCat("bind UDP 127.0.0.1:", (*first)->port())),
            std::string::npos)
      << second.status();
}

// The Prober over real UDP, in a network namespace of this test's own, where nftables
// drops every probe from one source port on arrival (as a switch's black hole for
// that 5-tuple would; a drop on output would fail the send instead): that flow's probes are all lost, the other
// flow's all answered, counted by the prober on the fake clock.
TEST(UdpTransportTest, BlackHoledSourcePortIsCountedLost) {
  if (unshare(CLONE_NEWNET) != 0) {
    GTEST_SKIP() << "skipped: cannot create a network namespace (unshare(CLONE_NEWNET): "
                 << std::strerror(errno) << "); the black hole needs root";
  }
  if (std::system("ip link set lo up") != 0) GTEST_SKIP() << "skipped: 'ip link set lo up' failed";
  if (std::system("command -v nft >/dev/null") != 0) {
    GTEST_SKIP() << "skipped: nft (Debian package nftables) is not installed; tools/deps.sh "
                    "installs it";
  }
  ASSERT_EQ(std::system("nft add table inet weft && nft add chain inet weft in "
                        "'{ type filter hook input priority 0; }' && "
                        "nft add rule inet weft in udp sport 50666 drop"),
            0);

  absl::StatusOr<std::unique_ptr<UdpResponder>> responder = UdpResponder::Start("127.0.0.1", 0);
  ASSERT_TRUE(responder.ok()) << responder.status();
  absl::StatusOr<std::unique_ptr<UdpProber>> udp = UdpProber::Create();
  ASSERT_TRUE(udp.ok());
  FakeClock clock(absl::FromUnixSeconds(1'800'000'010));
  prometheus::Registry registry;
  Prober prober(udp->get(), {}, &clock, ProberOptions{"node-a"}, &registry);
  weft::v1::Pinglist list;
  list.set_version(3);
  list.set_window_ms(10000);
  list.set_timeout_ms(500);
  weft::v1::ProbePeer* peer = list.add_peers();
  peer->set_node("node-b");
  peer->set_address("127.0.0.1");
  peer->set_udp_port((*responder)->port());
  peer->set_source_address("127.0.0.1");
  peer->add_source_ports(50665);
  peer->add_source_ports(50666);  // black-holed
  peer->set_probes_per_second(10);
  peer->set_dscp(26);
  ASSERT_TRUE(prober.Apply(list).ok());
  prober.Start();
  // Ten seconds of probing (100 probes, 50 per source port), stepped on the fake clock.
  // Before each step the answers of what was sent must be in (real time: the kernel's).
  const absl::Time end = clock.Now() + absl::Seconds(10);
  while (clock.Now() < end) {
    // The answered flow's replies are in before its deadlines come (real time: the
    // kernel's); only the black-holed flow's probes wait for their timeout. The
    // sender is done with this step once it waits on the clock again.
    ASSERT_TRUE(clock.AwaitWaiters(1, kWait));
    const absl::Time limit = absl::Now() + kWait;
    while (prober.in_flight(50665) > 0 && absl::Now() < limit) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_EQ(prober.in_flight(50665), 0u);
    ASSERT_TRUE(clock.AdvanceToNextDeadline(kWait).has_value());
  }
  // Past the window's end plus the timeout: every probe resolved, the window closed.
  const absl::Time limit = absl::Now() + kWait;
  std::vector<weft::v1::ProbeWindow> windows;
  while (windows.size() < 2 && absl::Now() < limit) {
    clock.AdvanceToNextDeadline(absl::Seconds(1));
    for (auto& w : prober.TakeWindows()) windows.push_back(w);
  }
  prober.Stop();
  ASSERT_EQ(windows.size(), 2u);
  for (const weft::v1::ProbeWindow& w : windows) {
    SCOPED_TRACE(w.ShortDebugString());
    EXPECT_EQ(w.pinglist_version(), 3u);
    // 10 probes/s over two source ports for the 10 s window: 50 each.
    EXPECT_EQ(w.sent(), 50u);
    if (w.source_port() == 50666) {
      EXPECT_EQ(w.lost(), w.sent());
      EXPECT_FALSE(w.has_rtt_p50_us());
    } else {
      EXPECT_EQ(w.source_port(), 50665u);
      EXPECT_EQ(w.lost(), 0u);
      EXPECT_GT(w.rtt_p50_us(), 0);
      EXPECT_EQ(w.dscp_mismatches(), 0u);
    }
  }
}

}  // namespace
}  // namespace weft::agent::probe
