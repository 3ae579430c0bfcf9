// NetnsFabric, checked with real packets: UDP between hosts of different ToRs crosses
// both spines, a source port always takes the same spine, and each fault touches exactly
// the traffic it should: a black-holed source port, total loss on one ToR-to-spine
// direction (only the ports hashed onto that spine), a cable down (the far side keeps
// hashing onto it), a throttled cable; clearing a cable brings everything back; the
// management network reaches the test's namespace.
#include "tests/netns_fabric.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace weft::testing {
namespace {

constexpr int kFirstPort = 41000;
constexpr int kPorts = 48;
constexpr int kReceiverPort = 9000;

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
  return address;
}

class NetnsFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NetnsFabric>> fabric = NetnsFabric::Create({});
    if (!fabric.ok()) GTEST_SKIP() << "skipped: " << fabric.status().message();
    fabric_ = *std::move(fabric);
  }

  // Sends `per_port` datagrams from each of `ports` (as UDP source ports) of host `from`
  // to host `to`; returns how many arrived per source port (absent: none).
  std::map<int, int> Send(const std::string& from, const std::string& to,
                          const std::vector<int>& ports, int per_port = 4,
                          size_t bytes = 64) {
    std::map<int, int> received;
    absl::StatusOr<int> receiver = fabric_->SocketIn(to, SOCK_DGRAM);
    EXPECT_TRUE(receiver.ok()) << receiver.status();
    if (!receiver.ok()) return received;
    const int buffer_bytes = 8 << 20;  // a burst of 400 KB must not overflow it
    setsockopt(*receiver, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(buffer_bytes));
    sockaddr_in bound = Address(fabric_->host(to).fabric_ip, kReceiverPort);
    EXPECT_EQ(bind(*receiver, reinterpret_cast<sockaddr*>(&bound), sizeof(bound)), 0);
    const std::string payload(bytes, 'w');
    for (int port : ports) {
      absl::StatusOr<int> sender = fabric_->SocketIn(from, SOCK_DGRAM);
      EXPECT_TRUE(sender.ok()) << sender.status();
      if (!sender.ok()) continue;
      sockaddr_in source = Address(fabric_->host(from).fabric_ip, port);
      EXPECT_EQ(bind(*sender, reinterpret_cast<sockaddr*>(&source), sizeof(source)), 0) << port;
      for (int i = 0; i < per_port; ++i) {
        sendto(*sender, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&bound),
               sizeof(bound));
      }
      close(*sender);
    }
    // Everything that will arrive has arrived once all did or the socket stays quiet for
    // 300 ms.
    pollfd readable{*receiver, POLLIN, 0};
    char buffer[2048];
    size_t arrived = 0;
    const size_t sent = ports.size() * per_port;
    while (arrived < sent && poll(&readable, 1, 300) == 1) {
      sockaddr_in peer{};
      socklen_t length = sizeof(peer);
      if (recvfrom(*receiver, buffer, sizeof(buffer), 0, reinterpret_cast<sockaddr*>(&peer),
                   &length) > 0) {
        ++received[ntohs(peer.sin_port)];
        ++arrived;
      }
    }
    close(*receiver);
    return received;
  }

  int64_t RxFrom(const std::string& device, const std::string& peer) {
    absl::StatusOr<NetnsFabric::PortCounters> counters = fabric_->Counters(device, peer);
    EXPECT_TRUE(counters.ok()) << counters.status();
    return counters.ok() ? counters->rx_packets : -1;
  }

  // The spine each source port's datagrams from `from` to `to` cross, port by port, read
  // off the spines' counters of the port facing `tor`.
  std::map<int, std::string> SpineOf(const std::string& from, const std::string& to,
                                     const std::string& tor, const std::vector<int>& ports) {
    std::map<int, std::string> spine_of;
    for (int port : ports) {
      const int64_t before0 = RxFrom("spine-0", tor), before1 = RxFrom("spine-1", tor);
      Send(from, to, {port}, 3);
      const int64_t via0 = RxFrom("spine-0", tor) - before0;
      const int64_t via1 = RxFrom("spine-1", tor) - before1;
      EXPECT_TRUE((via0 >= 3 && via1 < 3) || (via1 >= 3 && via0 < 3))
          << "port " << port << " split over the spines: " << via0 << " / " << via1;
      spine_of[port] = via0 >= via1 ? "spine-0" : "spine-1";
    }
    return spine_of;
  }

  std::unique_ptr<NetnsFabric> fabric_;
};

std::vector<int> Ports() {
  std::vector<int> ports;
  for (int p = kFirstPort; p < kFirstPort + kPorts; ++p) ports.push_back(p);
  return ports;
}

TEST_F(NetnsFabricTest, SourcePortsPinPathsOverBothSpinesAndFaultsHitOnlyTheirTraffic) {
  EXPECT_EQ(fabric_->hosts().size(), 4u);
  EXPECT_EQ(fabric_->cables().size(), 8u);  // 4 host cables, 4 ToR-spine cables
  const std::vector<int> ports = Ports();

  // Everything arrives, every port pinned to one spine, both spines used.
  std::map<int, int> got = Send("gpu-a01", "gpu-b01", ports);
  ASSERT_EQ(got.size(), ports.size());
  for (const auto& [port, n] : got) EXPECT_EQ(n, 4) << port;
  const std::map<int, std::string> spine_of = SpineOf("gpu-a01", "gpu-b01", "tor-a", ports);
  std::set<int> via_spine1;
  for (const auto& [port, spine] : spine_of) {
    if (spine == "spine-1") via_spine1.insert(port);
  }
  EXPECT_GT(via_spine1.size(), ports.size() / 8) << "ECMP did not spread source ports";
  EXPECT_LT(via_spine1.size(), ports.size() * 7 / 8) << "ECMP did not spread source ports";
  // A port's path does not change between runs.
  EXPECT_EQ(SpineOf("gpu-a01", "gpu-b01", "tor-a", {kFirstPort, kFirstPort + 1}).at(kFirstPort),
            spine_of.at(kFirstPort));

  // A black hole for one source port on the host's cable: that port only.
  ASSERT_TRUE(fabric_->BlackHoleUdpSourcePort("gpu-a01", "tor-a", kFirstPort + 7).ok());
  got = Send("gpu-a01", "gpu-b01", ports);
  EXPECT_EQ(got.count(kFirstPort + 7), 0u);
  EXPECT_EQ(got.size(), ports.size() - 1);
  ASSERT_TRUE(fabric_->ClearCable("gpu-a01", "tor-a").ok());

  // Everything tor-a sends to spine-0 lost: exactly the ports hashed onto spine-0.
  const absl::Status dropped = fabric_->DropRandom("tor-a", "spine-0", 1.0);
  ASSERT_TRUE(dropped.ok()) << dropped;
  got = Send("gpu-a01", "gpu-b01", ports);
  std::set<int> arrived;
  for (const auto& [port, n] : got) arrived.insert(port);
  EXPECT_EQ(arrived, via_spine1);
  // The other direction of the cable is untouched.
  EXPECT_EQ(Send("gpu-b01", "gpu-a01", ports).size(), ports.size());
  ASSERT_TRUE(fabric_->ClearCable("tor-a", "spine-0").ok());
  EXPECT_EQ(Send("gpu-a01", "gpu-b01", ports).size(), ports.size());

  // Partial random loss: some packets of some ports, not all of them.
  ASSERT_TRUE(fabric_->DropRandom("spine-1", "tor-b", 0.5).ok());
  got = Send("gpu-a01", "gpu-b01", ports, 8);
  int total = 0;
  for (const auto& [port, n] : got) total += n;
  const int via1_sent = static_cast<int>(via_spine1.size()) * 8;
  EXPECT_GT(total, kPorts * 8 - via1_sent);  // some through spine-1 arrive
  EXPECT_LT(total, kPorts * 8);              // and some do not
  ASSERT_TRUE(fabric_->ClearCable("tor-b", "spine-1").ok());
}

TEST_F(NetnsFabricTest, ADownCableIsLeftByItsEndsButFarRoutersStillHashOntoIt) {
  const std::vector<int> ports = Ports();
  ASSERT_TRUE(fabric_->SetCableDown("tor-a", "spine-1", true).ok());
  // tor-a stops using spine-1 for what it sends: all of a -> b arrives.
  EXPECT_EQ(Send("gpu-a01", "gpu-b01", ports).size(), ports.size());
  // tor-b still hashes some of b -> a onto spine-1, which cannot reach tor-a.
  const size_t arrived = Send("gpu-b01", "gpu-a01", ports).size();
  EXPECT_GT(arrived, ports.size() / 8);
  EXPECT_LT(arrived, ports.size() * 7 / 8);
  ASSERT_TRUE(fabric_->ClearCable("tor-a", "spine-1").ok());
  EXPECT_EQ(Send("gpu-b01", "gpu-a01", ports).size(), ports.size());
}

TEST_F(NetnsFabricTest, AThrottledCableDropsABurstItCannotCarry) {
  const std::vector<int> one = {kFirstPort};
  // 400 datagrams of 1,000 B: 3.2 Mb in one burst through 1 Mb/s with a 50 ms queue.
  ASSERT_TRUE(fabric_->Throttle("gpu-a01", "tor-a", 1e6).ok());
  std::map<int, int> got = Send("gpu-a01", "gpu-a02", one, 400, 1000);
  EXPECT_LT(got[kFirstPort], 200);
  EXPECT_GT(got[kFirstPort], 0);
  ASSERT_TRUE(fabric_->ClearCable("gpu-a01", "tor-a").ok());
  got = Send("gpu-a01", "gpu-a02", one, 400, 1000);
  EXPECT_GT(got[kFirstPort], 390);
}

TEST_F(NetnsFabricTest, HostsReachTheTestsNamespaceOverTheManagementNetwork) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in any = Address("0.0.0.0", 0);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t length = sizeof(any);
  getsockname(listener, reinterpret_cast<sockaddr*>(&any), &length);
  for (const NetnsHost& host : fabric_->hosts()) {
    absl::StatusOr<int> client = fabric_->SocketIn(host.name, SOCK_STREAM);
    ASSERT_TRUE(client.ok()) << client.status();
    sockaddr_in gateway = Address(host.management_gateway, ntohs(any.sin_port));
    EXPECT_EQ(connect(*client, reinterpret_cast<sockaddr*>(&gateway), sizeof(gateway)), 0)
        << host.name << " -> " << host.management_gateway;
    close(*client);
  }
  close(listener);
  // The fabric addresses are not reachable from the test's namespace.
  absl::StatusOr<std::string> routes = fabric_->Exec("gpu-a01", "ip route");
  ASSERT_TRUE(routes.ok()) << routes.status();
  EXPECT_NE(routes->find("10.0.0.0/8 via 10.0.1.1"), std::string::npos) << *routes;
}

TEST_F(NetnsFabricTest, BadFaultsAreRefusedWithTheReason) {
  EXPECT_EQ(fabric_->DropRandom("tor-a", "tor-b", 0.1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fabric_->DropRandom("tor-a", "spine-0", 1.5).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fabric_->BlackHoleUdpSourcePort("gpu-a01", "tor-a", 70000).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fabric_->SetCableDown("gpu-z09", "tor-a", true).code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::testing
