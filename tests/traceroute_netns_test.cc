// The agent's traceroute for real (issue 22): UdpProber's trace packets (IP TTL 1..N on
// the flow's own socket) cross a leaf-spine of network namespaces (tests/netns_fabric.h),
// the ToRs and spines answer with ICMP time-exceeded, read back from the socket's error
// queue, and the responder answers the packet that reaches it. The spine each source port
// names is the one tor-a's multipath route picks for that 5-tuple (`ip route get`).
// Needs root and iproute2; skips with the reason otherwise.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/probe/udp_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/netns_fabric.h"

namespace weft {
namespace {

using weft::agent::probe::ProbeFlow;
using weft::agent::probe::TraceReply;
using weft::agent::probe::UdpProber;
using weft::agent::probe::UdpResponder;
using weft::testing::NetnsFabric;

constexpr uint16_t kResponderPort = 7421;
constexpr int kMaxHops = 6;

TEST(TracerouteNetnsTest, EachSourcePortNamesTheSpineItsRouteTakes) {
  absl::StatusOr<std::unique_ptr<NetnsFabric>> fabric =
      NetnsFabric::Create({.spines = 2, .tors = 2, .hosts_per_tor = 1, .management = false});
  if (!fabric.ok()) GTEST_SKIP() << "skipped: " << fabric.status().message();
  const std::string src_ip = (*fabric)->host("gpu-a01").fabric_ip;
  const std::string dst_ip = (*fabric)->host("gpu-b01").fabric_ip;

  absl::StatusOr<std::unique_ptr<UdpResponder>> responder = absl::InternalError("not started");
  ASSERT_TRUE((*fabric)->RunIn("gpu-b01", [&] {
    responder = UdpResponder::Start("0.0.0.0", kResponderPort);
  }).ok());
  ASSERT_TRUE(responder.ok()) << responder.status();
  absl::StatusOr<std::unique_ptr<UdpProber>> prober = UdpProber::Create();
  ASSERT_TRUE(prober.ok()) << prober.status();

  // Eight source ports: with two spines both are all but certainly taken.
  std::map<uint64_t, ProbeFlow> flows;
  for (uint16_t port = 49152; port < 49160; ++port) {
    ProbeFlow flow;
    flow.peer_node = "gpu-b01";
    flow.peer_address = dst_ip;
    flow.peer_port = kResponderPort;
    flow.source_address = src_ip;
    flow.source_port = port;
    flow.dscp = 26;
    flows[port] = flow;
  }
  // The sockets are made on first send, so send from inside gpu-a01's namespace.
  ASSERT_TRUE((*fabric)->RunIn("gpu-a01", [&] {
    for (const auto& [token, flow] : flows) {
      for (int ttl = 1; ttl <= kMaxHops; ++ttl) {
        absl::Status sent = (*prober)->SendTrace(flow, token, ttl);
        EXPECT_TRUE(sent.ok()) << sent;
      }
    }
  }).ok());

  std::map<uint64_t, std::map<int, TraceReply>> replies;  // by token, TTL
  auto complete = [&] {
    for (const auto& [token, flow] : flows) {
      const auto& r = replies[token];
      for (int ttl = 1; ttl <= kMaxHops; ++ttl) {
        if (r.count(ttl) == 0) return false;
      }
    }
    return true;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!complete() && absl::Now() < deadline) {
    (*prober)->Receive(absl::Milliseconds(100));
    for (TraceReply& r : (*prober)->TakeTraceReplies()) replies[r.token][r.ttl] = r;
  }

  const std::vector<std::string> spine0 = (*fabric)->AddressesOf("spine-0");
  const std::vector<std::string> spine1 = (*fabric)->AddressesOf("spine-1");
  const std::vector<std::string> tor_b = (*fabric)->AddressesOf("tor-b");
  std::map<std::string, int> spines_seen;
  for (const auto& [port, flow] : flows) {
    SCOPED_TRACE(absl::StrCat("source port ", port));
    const auto& r = replies[port];
    ASSERT_EQ(r.size(), static_cast<size_t>(kMaxHops));
    // tor-a answers its host from the cable's ToR end.
    EXPECT_EQ(r.at(1).router, "10.0.1.1");
    EXPECT_FALSE(r.at(1).reached);
    // The spine, from its port facing tor-a; it must be the one the route picks.
    absl::StatusOr<std::string> route = (*fabric)->Exec(
        "tor-a", absl::StrCat("ip route get ", dst_ip, " from ", src_ip,
                              " iif gpu-a01 ipproto udp sport ", port, " dport ",
                              kResponderPort));
    ASSERT_TRUE(route.ok()) << route.status();
    const std::string spine = absl::StrContains(*route, "dev spine-1") ? "spine-1" : "spine-0";
    const std::vector<std::string>& expected = spine == "spine-0" ? spine0 : spine1;
    EXPECT_THAT(expected, ::testing::Contains(r.at(2).router)) << *route;
    ++spines_seen[spine];
    // tor-b, from one of its spine-facing ports; then the responder.
    EXPECT_THAT(tor_b, ::testing::Contains(r.at(3).router));
    for (int ttl = 4; ttl <= kMaxHops; ++ttl) EXPECT_TRUE(r.at(ttl).reached) << ttl;
  }
  EXPECT_EQ(spines_seen.size(), 2u) << "all eight ports hashed onto one spine";
}

}  // namespace
}  // namespace weft
