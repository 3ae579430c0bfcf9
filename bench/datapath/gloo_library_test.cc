// Gloo itself, through the adapter weft-perf uses: ranks as threads, FileStore under
// TEST_TMPDIR, TCP on loopback.
#include "bench/datapath/gloo_library.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace weft::bench {
namespace {

std::string StoreDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  return dir;
}

TEST(GlooLibraryTest, AllReduceAllToAllAllGatherMaxAndSum) {
  constexpr int kRanks = 3;
  const std::string dir = StoreDir("gloo-store");
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      auto gloo = GlooLibrary::Connect(rank, kRanks, dir, "127.0.0.1", absl::Seconds(30));
      ASSERT_TRUE(gloo.ok()) << gloo.status();
      std::vector<float> data(1000, rank + 1.0f);
      ASSERT_TRUE((*gloo)->AllReduceSum(data.data(), data.size()).ok());
      EXPECT_EQ(data[999], 6.0f);
      std::vector<float> in(kRanks * 2), out(kRanks * 2);
      for (int to = 0; to < kRanks; ++to) in[to * 2] = in[to * 2 + 1] = rank * 10.0f + to;
      ASSERT_TRUE((*gloo)->AllToAll(in.data(), out.data(), 2).ok());
      for (int from = 0; from < kRanks; ++from) EXPECT_EQ(out[from * 2], from * 10.0f + rank);
      std::vector<float> mine(3, rank + 0.5f), gathered(kRanks * 3, -1.0f);
      ASSERT_TRUE((*gloo)->AllGather(mine.data(), gathered.data(), 3).ok());
      for (int from = 0; from < kRanks; ++from) EXPECT_EQ(gathered[from * 3 + 2], from + 0.5f);
      EXPECT_EQ((*gloo)->ReduceScatterSum(in.data(), out.data(), 2).code(),
                absl::StatusCode::kUnimplemented);
      auto max = (*gloo)->MaxOverRanks(rank * 1.5);
      ASSERT_TRUE(max.ok());
      EXPECT_EQ(*max, 3.0);
      auto sum = (*gloo)->SumOverRanks(rank * 1.5);
      ASSERT_TRUE(sum.ok());
      EXPECT_EQ(*sum, 4.5);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(GlooLibraryTest, VersionIsTheHeadersOne) { EXPECT_EQ(GlooVersion(), "0.5.0"); }

}  // namespace
}  // namespace weft::bench
