#include "common/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace weft {
namespace {

bool Blocked(int signal_number) {
  sigset_t current;
  pthread_sigmask(SIG_BLOCK, nullptr, &current);
  return sigismember(&current, signal_number) == 1;
}

TEST(StopSignalsTest, BlocksBothSignalsInThreadsStartedAfterAndWaitTakesTheSignal) {
  StopSignals stop;
  bool blocked_in_thread = false;
  std::thread([&] { blocked_in_thread = Blocked(SIGTERM) && Blocked(SIGINT); }).join();
  EXPECT_TRUE(blocked_in_thread);
  // A process-directed SIGTERM stays pending (no handler, no death) until Wait takes it.
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  EXPECT_EQ(stop.Wait(), SIGTERM);
  ASSERT_EQ(kill(getpid(), SIGINT), 0);
  EXPECT_EQ(stop.Wait(), SIGINT);
}

}  // namespace
}  // namespace weft
