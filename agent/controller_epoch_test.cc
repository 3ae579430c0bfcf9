#include "agent/controller_epoch.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace weft::agent {
namespace {

TEST(ControllerEpochFenceTest, KeepsTheHighestAndRefusesOnlyLower) {
  ControllerEpochFence fence;
  EXPECT_TRUE(fence.Admit(0)) << "a single controller without etcd sends 0";
  EXPECT_TRUE(fence.Admit(0));
  EXPECT_TRUE(fence.Admit(41));
  EXPECT_TRUE(fence.Admit(41)) << "the same leader keeps speaking";
  EXPECT_FALSE(fence.Admit(40)) << "an older leader woke up";
  EXPECT_FALSE(fence.Admit(0));
  EXPECT_TRUE(fence.Admit(57));
  EXPECT_FALSE(fence.Admit(41));
  EXPECT_EQ(fence.highest(), 57u);
}

TEST(ControllerEpochFenceTest, ConcurrentLeadersEndAtTheHighest) {
  ControllerEpochFence fence;
  std::vector<std::thread> threads;
  for (uint64_t t = 1; t <= 4; ++t) {
    threads.emplace_back([&fence, t] {
      for (uint64_t e = t; e < 4000; e += 4) fence.Admit(e);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fence.highest(), 3999u);
  EXPECT_FALSE(fence.Admit(3998));
}

}  // namespace
}  // namespace weft::agent
