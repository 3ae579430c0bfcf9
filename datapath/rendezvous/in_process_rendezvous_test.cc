#include "datapath/rendezvous/in_process_rendezvous.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

TEST(InProcessRendezvousTest, ExchangeAcrossThreads) {
  InProcessRendezvous rendezvous;
  constexpr int kRanks = 4;
  std::vector<std::vector<std::string>> seen(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      auto values = ExchangeAll(rendezvous, "job/addr", rank, kRanks,
                                "host-" + std::to_string(rank), absl::Seconds(10));
      ASSERT_TRUE(values.ok()) << values.status();
      seen[rank] = *values;
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(seen[rank].size(), 4u);
    for (int peer = 0; peer < kRanks; ++peer) {
      EXPECT_EQ(seen[rank][peer], "host-" + std::to_string(peer));
    }
  }
}

TEST(InProcessRendezvousTest, TimeoutNamesTheMissingRanks) {
  InProcessRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.Publish("k", 0, "a").ok());
  ASSERT_TRUE(rendezvous.Publish("k", 1, "b").ok());
  ASSERT_TRUE(rendezvous.Publish("k", 3, "d").ok());
  auto values = rendezvous.Lookup("k", AllRanks(6), absl::Milliseconds(20));
  ASSERT_EQ(values.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(values.status().message(),
            "rendezvous 'k': ranks 2, 4, 5 never arrived (waited 20ms for 6 ranks)");
}

TEST(InProcessRendezvousTest, RepublishingTheSameValueIsHarmless) {
  InProcessRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.Publish("k", 0, "a").ok());
  EXPECT_TRUE(rendezvous.Publish("k", 0, "a").ok());
  EXPECT_EQ(rendezvous.Publish("k", 0, "b").code(), absl::StatusCode::kAlreadyExists);
  auto values = rendezvous.Lookup("k", {0}, absl::ZeroDuration());
  ASSERT_TRUE(values.ok());
  EXPECT_EQ((*values)[0], "a");
}

TEST(InProcessRendezvousTest, KeysAreIndependent) {
  InProcessRendezvous rendezvous;
  ASSERT_TRUE(rendezvous.Publish("a", 0, "x").ok());
  EXPECT_EQ(rendezvous.Lookup("b", {0}, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(InProcessRendezvousTest, CloseWakesWaiters) {
  InProcessRendezvous rendezvous;
  std::thread closer([&] {
    absl::SleepFor(absl::Milliseconds(5));
    rendezvous.Close();
  });
  auto values = rendezvous.Lookup("k", {0}, absl::Seconds(60));
  closer.join();
  EXPECT_EQ(values.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace weft::datapath
