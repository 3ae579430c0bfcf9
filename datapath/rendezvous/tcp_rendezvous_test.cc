#include "datapath/rendezvous/tcp_rendezvous.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

TEST(TcpRendezvousTest, RanksExchangeThroughTheServer) {
  auto server = TcpRendezvousServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  const HostPort address{"127.0.0.1", (*server)->port()};
  constexpr int kRanks = 5;
  std::vector<std::vector<std::string>> seen(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      auto client = TcpRendezvousClient::Connect(address, absl::Seconds(10));
      ASSERT_TRUE(client.ok()) << client.status();
      // Values are bytes, not text.
      std::string value = "addr-" + std::to_string(rank);
      value.push_back('\0');
      auto values = ExchangeAll(**client, "job/x", rank, kRanks, value, absl::Seconds(10));
      ASSERT_TRUE(values.ok()) << values.status();
      seen[rank] = *values;
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(seen[rank].size(), static_cast<size_t>(kRanks));
    for (int peer = 0; peer < kRanks; ++peer) {
      std::string want = "addr-" + std::to_string(peer);
      want.push_back('\0');
      EXPECT_EQ(seen[rank][peer], want);
    }
  }
}

TEST(TcpRendezvousTest, TimeoutNamesTheRanksThatNeverArrived) {
  auto server = TcpRendezvousServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  auto client = TcpRendezvousClient::Connect({"127.0.0.1", (*server)->port()}, absl::Seconds(5));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Publish("k", 0, "a").ok());
  auto values = (*client)->Lookup("k", AllRanks(3), absl::Milliseconds(20));
  ASSERT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(values.status().message(),
            "rendezvous 'k': ranks 1, 2 never arrived (waited 20ms for 3 ranks)");
  EXPECT_EQ((*client)->Publish("k", 0, "b").code(), absl::StatusCode::kAlreadyExists);
}

TEST(TcpRendezvousTest, ServerStopsWhileAClientWaits) {
  auto server = TcpRendezvousServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  auto client = TcpRendezvousClient::Connect({"127.0.0.1", (*server)->port()}, absl::Seconds(5));
  ASSERT_TRUE(client.ok());
  std::thread waiter([&] {
    auto values = (*client)->Lookup("never", {0}, absl::Seconds(60));
    EXPECT_FALSE(values.ok());
  });
  absl::SleepFor(absl::Milliseconds(10));
  server->reset();  // must not hang on the waiting lookup
  waiter.join();
}

TEST(TcpRendezvousTest, ClientGivesUpWhenNoServerListens) {
  int port = 0;
  {
    auto listener = ListenTcp("127.0.0.1", 0, 1);
    ASSERT_TRUE(listener.ok());
    port = *LocalPort(listener->get());
  }
  auto client = TcpRendezvousClient::Connect({"127.0.0.1", port}, absl::Milliseconds(20));
  EXPECT_EQ(client.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(client.status().message().find("rendezvous server 127.0.0.1:"), absl::string_view::npos)
      << client.status();
}

}  // namespace
}  // namespace weft::datapath
