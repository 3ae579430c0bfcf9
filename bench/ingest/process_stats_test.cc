#include "bench/ingest/process_stats.h"

#include <unistd.h>

#include <memory>

#include "gtest/gtest.h"

namespace weft::bench {
namespace {

TEST(ProcessStatsTest, CpuSecondsCountFieldsAfterTheLastParenthesis) {
  // comm "weft (x) y" holds spaces and parentheses; utime 150, stime 50 ticks.
  const char kStat[] =
      "4242 (weft (x) y) S 1 4242 4242 0 -1 4194560 2000 0 0 0 150 50 0 0 20 0 9 0 100 "
      "1000000 2000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";
  absl::StatusOr<double> seconds = ParseProcStatCpuSeconds(kStat, 100);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_DOUBLE_EQ(*seconds, 2.0);
}

TEST(ProcessStatsTest, CpuSecondsRefuseWhatIsNotAStatLine) {
  EXPECT_FALSE(ParseProcStatCpuSeconds("hello", 100).ok());
  EXPECT_FALSE(ParseProcStatCpuSeconds("1 (x) S 1 2", 100).ok());
  EXPECT_FALSE(ParseProcStatCpuSeconds("1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14", 0).ok());
}

TEST(ProcessStatsTest, TreeCpuSecondsAddReapedChildren) {
  const char kStat[] =
      "4242 (make) S 1 4242 4242 0 -1 4194560 2000 0 0 0 150 50 300 100 20 0 9 0 100 "
      "1000000 2000\n";
  absl::StatusOr<double> seconds = ParseProcStatTreeCpuSeconds(kStat, 100);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_DOUBLE_EQ(*seconds, 6.0);
  EXPECT_FALSE(ParseProcStatTreeCpuSeconds("1 (x) S 1 2 3", 100).ok());
  // This process at least.
  EXPECT_GE(MachineCpuSeconds(), ProcessCpuSeconds(getpid()).value());
}

TEST(ProcessStatsTest, RssComesFromTheVmRssLine) {
  absl::StatusOr<long> kib =
      ParseVmRssKib("Name:\tweft\nVmHWM:\t  9000 kB\nVmRSS:\t  8123 kB\nThreads:\t9\n");
  ASSERT_TRUE(kib.ok());
  EXPECT_EQ(*kib, 8123);
  EXPECT_EQ(ParseVmRssKib("Name:\tzombie\n").status().code(), absl::StatusCode::kNotFound);
}

TEST(ProcessStatsTest, OwnProcessIsReadable) {
  absl::StatusOr<double> cpu = ProcessCpuSeconds(getpid());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_GE(*cpu, 0);
  absl::StatusOr<long> rss = ProcessRssKib(getpid());
  ASSERT_TRUE(rss.ok()) << rss.status();
  EXPECT_GT(*rss, 100);
}

TEST(ProcessStatsTest, SeriesAreSummedByNameAcrossLabels) {
  const char kText[] =
      "# HELP x_total things\n"
      "# TYPE x_total counter\n"
      "x_total{reason=\"a b\"} 2\n"
      "x_total{reason=\"c\"} 3 1700000000000\n"
      "y 1.5e3\n"
      "z{le=\"+Inf\"} NaN-ish\n";
  const std::map<std::string, double> sums = SumSeriesByName(kText);
  EXPECT_DOUBLE_EQ(sums.at("x_total"), 5);
  EXPECT_DOUBLE_EQ(sums.at("y"), 1500);
  EXPECT_EQ(sums.count("z"), 0u);
}

TEST(ProcessStatsTest, FetchRefusesAddressesItCannotUse) {
  EXPECT_EQ(FetchMetrics("localhost").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchMetrics("example.com:80").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::bench
