#include "bench/datapath/timing.h"

#include "gtest/gtest.h"

namespace weft::bench {
namespace {

TEST(TimeCollectiveTest, RunsWarmupProbeAndABudgetedCount) {
  int runs = 0;
  int syncs = 0;
  CollectiveHooks hooks;
  hooks.run_once = [&] {
    ++runs;
    return absl::OkStatus();
  };
  hooks.max_over_ranks = [&](double v) -> absl::StatusOr<double> {
    ++syncs;
    return v;
  };
  TimingPolicy policy;
  policy.budget_seconds = 0;  // -> min_iterations
  policy.min_iterations = 3;
  policy.warmup_iterations = 2;
  absl::StatusOr<Timing> timing = TimeCollective(hooks, policy);
  ASSERT_TRUE(timing.ok());
  EXPECT_EQ(timing->iterations, 3);
  EXPECT_EQ(runs, 2 + 1 + 3);
  EXPECT_EQ(syncs, 2 + 3 * 2);  // warm-up line-up, probe, then two per batch
  EXPECT_GE(timing->time_us, 0);
}

TEST(TimeCollectiveTest, ReportsTheBestBatch) {
  int call = 0;
  CollectiveHooks hooks;
  hooks.run_once = [] { return absl::OkStatus(); };
  // The slowest rank's batch means: 3 s, then 1 s, then 2 s.
  const double batch_means[] = {3.0, 1.0, 2.0};
  int batch = 0;
  hooks.max_over_ranks = [&](double v) -> absl::StatusOr<double> {
    ++call;
    if (call <= 2 || v == 0) return v;  // line-ups and the probe
    return batch_means[batch++];
  };
  TimingPolicy policy;
  policy.budget_seconds = 1e9;
  policy.max_iterations = 3;
  policy.batches = 3;
  absl::StatusOr<Timing> timing = TimeCollective(hooks, policy);
  ASSERT_TRUE(timing.ok());
  EXPECT_EQ(timing->iterations, 3);
  EXPECT_DOUBLE_EQ(timing->time_us, 1e6);
}

TEST(TimeCollectiveTest, ReportsTheSlowestRank) {
  CollectiveHooks hooks;
  hooks.run_once = [] { return absl::OkStatus(); };
  hooks.max_over_ranks = [](double v) -> absl::StatusOr<double> { return v + 1.0; };
  TimingPolicy policy;
  policy.budget_seconds = 0;
  absl::StatusOr<Timing> timing = TimeCollective(hooks, policy);
  ASSERT_TRUE(timing.ok());
  EXPECT_GE(timing->time_us, 1e6);  // the "other rank" took a second longer
}

TEST(TimeCollectiveTest, ReportsEveryRanksCpuPerRunInTheReportedBatch) {
  CollectiveHooks hooks;
  int run = 0;
  double cpu = 0;
  hooks.run_once = [&] {
    // This rank spends 3 ms of CPU per run in the probe and the first batch (runs 1-3)
    // and 2 ms in the second (runs 4-5).
    cpu += ++run <= 3 ? 0.003 : 0.002;
    return absl::OkStatus();
  };
  hooks.cpu_seconds = [&] { return cpu; };
  // The slowest rank's batch means: 5 s for the first batch, 1 s for the second.
  int call = 0;
  hooks.max_over_ranks = [&](double v) -> absl::StatusOr<double> {
    ++call;
    if (call <= 2 || v == 0) return v;  // line-ups and the probe
    return call <= 4 ? 5.0 : 1.0;
  };
  // Four ranks, each spending what this one does.
  hooks.sum_over_ranks = [](double v) -> absl::StatusOr<double> { return 4 * v; };
  TimingPolicy policy;
  policy.budget_seconds = 1e9;
  policy.max_iterations = 4;
  policy.batches = 2;
  absl::StatusOr<Timing> timing = TimeCollective(hooks, policy);
  ASSERT_TRUE(timing.ok());
  EXPECT_DOUBLE_EQ(timing->time_us, 1e6);
  EXPECT_NEAR(timing->cpu_us, 8000, 1e-6) << "the CPU of the batch whose time is reported";
}

TEST(TimeCollectiveTest, PropagatesFailures) {
  CollectiveHooks hooks;
  hooks.run_once = [] { return absl::UnavailableError("peer gone"); };
  hooks.max_over_ranks = [](double v) -> absl::StatusOr<double> { return v; };
  EXPECT_EQ(TimeCollective(hooks, {}).status().code(), absl::StatusCode::kUnavailable);
}

TEST(SweepSizesTest, FromEightBytesToTheCap) {
  std::vector<size_t> sizes = SweepSizes(256u << 20);
  EXPECT_EQ(sizes.front(), 8u);
  EXPECT_EQ(sizes.back(), 256u << 20);
  EXPECT_EQ(sizes.size(), 12u);
  EXPECT_EQ(SweepSizes(64u << 10).back(), 64u << 10);
}

TEST(WholeFloatsPerRankBytesTest, WholeFloatsPerRank) {
  EXPECT_EQ(WholeFloatsPerRankBytes(8, 2), 8u);
  EXPECT_EQ(WholeFloatsPerRankBytes(8, 8), 32u);
  EXPECT_EQ(WholeFloatsPerRankBytes(64, 3), 72u);
}

TEST(MeasurementLinesTest, RoundTrip) {
  Measurement m{"gloo", Collective::kAllToAll, 8, 4096, 12.5, 40, 250.5};
  Measurement gather{"mpi", Collective::kAllGather, 4, 64, 3.0, 9, 4.0};
  auto parsed = ParseMeasurements(SerializeMeasurement(gather) + SerializeMeasurement(m));
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].collective, Collective::kAllGather);
  EXPECT_EQ((*parsed)[0].ranks, 4);
  EXPECT_EQ((*parsed)[1].library, "gloo");
  EXPECT_EQ((*parsed)[1].collective, Collective::kAllToAll);
  EXPECT_EQ((*parsed)[1].bytes, 4096u);
  EXPECT_DOUBLE_EQ((*parsed)[1].time_us, 12.5);
  EXPECT_DOUBLE_EQ((*parsed)[1].cpu_us, 250.5);
  auto scatter = ParseMeasurements("gloo reduce-scatter 2 8 1 1 1\n");
  ASSERT_TRUE(scatter.ok());
  EXPECT_EQ((*scatter)[0].collective, Collective::kReduceScatter);
  EXPECT_FALSE(ParseMeasurements("gloo broadcast 2 8 1 1 1\n").ok());
  EXPECT_FALSE(ParseMeasurements("gloo all-to-all 2 8 1 1\n").ok()) << "no CPU field";
}

TEST(PassLinesTest, RoundTripKeepsEachPassApart) {
  const std::vector<std::vector<Measurement>> passes = {
      {{"weft", Collective::kAllReduce, 2, 8, 6.0, 1000, 12.0},
       {"gloo", Collective::kAllReduce, 2, 8, 90.0, 100, 180.0}},
      {},
      {{"weft", Collective::kAllReduce, 2, 8, 7.0, 900, 14.0}}};
  const std::string text = SerializePasses(passes);
  EXPECT_EQ(text.substr(0, 9), "# pass 1\n");
  auto parsed = ParsePasses("# weft-perf raw\n" + text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  ASSERT_EQ((*parsed)[0].size(), 2u);
  EXPECT_EQ((*parsed)[0][1].library, "gloo");
  EXPECT_TRUE((*parsed)[1].empty());
  ASSERT_EQ((*parsed)[2].size(), 1u);
  EXPECT_DOUBLE_EQ((*parsed)[2][0].time_us, 7.0);
}

TEST(PassLinesTest, SaysWhichLineIsWrong) {
  auto orphan = ParsePasses("weft all-reduce 2 8 6 1000 12\n");
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(orphan.status().message().find("line 1: a measurement before the first '# pass'"),
            std::string::npos)
      << orphan.status();
  auto garbage = ParsePasses("# pass 1\nweft all-reduce 2 8 6 1000 12\nweft all-reduce 2 x\n");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("line 3: bad measurement line 'weft all-reduce 2 x'"),
            std::string::npos)
      << garbage.status();
}

}  // namespace
}  // namespace weft::bench
