#include "bench/datapath/launcher.h"

#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace weft::bench {
namespace {

TEST(RunRankProcessesTest, CollectsRankZerosOutput) {
  auto out = RunRankProcesses(
      3,
      [](int rank, int fd) {
        if (rank == 0) {
          const std::string text = "hello from rank 0\n";
          if (::write(fd, text.data(), text.size()) < 0) return 1;
        }
        return 0;
      },
      absl::Seconds(30));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "hello from rank 0\n");
}

TEST(RunRankProcessesTest, NamesFailedRanks) {
  auto out = RunRankProcesses(
      3, [](int rank, int) { return rank == 2 ? 3 : 0; }, absl::Seconds(30));
  EXPECT_EQ(out.status().message(), "failed: rank 2 (exit 3)");
}

TEST(RunRankProcessesTest, KillsRanksPastTheTimeout) {
  auto out = RunRankProcesses(
      2,
      [](int, int) {
        ::pause();
        return 0;
      },
      absl::Milliseconds(100));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(RunCommandTest, CapturesStdout) {
  auto out = RunCommand({"echo", "weft"}, absl::Seconds(10));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "weft\n");
  EXPECT_FALSE(RunCommand({"false"}, absl::Seconds(10)).ok());
}

}  // namespace
}  // namespace weft::bench
