#include "bench/datapath/perf_report.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft::bench {
namespace {

TEST(BandwidthTest, NcclTestsFormulas) {
  // 1 GB in 1 s.
  EXPECT_DOUBLE_EQ(AlgBandwidthGBps(1'000'000'000, 1e6), 1.0);
  // All-reduce on 4 ranks: × 2·3/4 = 1.5.
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(Collective::kAllReduce, 4, 1'000'000'000, 1e6), 1.5);
  // All-to-all on 8 ranks: × 7/8.
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(Collective::kAllToAll, 8, 1'000'000'000, 1e6), 0.875);
  // Two ranks: all-reduce busbw = algbw.
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(Collective::kAllReduce, 2, 500, 1), 0.5);
  EXPECT_EQ(AlgBandwidthGBps(10, 0), 0);
}

TEST(KeepBestTest, AddsNewAndKeepsFasterMeasurements) {
  std::vector<Measurement> all = {{"weft", Collective::kAllReduce, 2, 8, 10.0, 5}};
  KeepBest(all, {{"weft", Collective::kAllReduce, 2, 8, 12.0, 5},
                 {"weft", Collective::kAllReduce, 2, 64, 11.0, 5},
                 {"gloo", Collective::kAllReduce, 2, 8, 30.0, 5}});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].time_us, 10.0);
  KeepBest(all, {{"weft", Collective::kAllReduce, 2, 8, 9.0, 7}});
  EXPECT_EQ(all[0].time_us, 9.0);
  EXPECT_EQ(all[0].iterations, 7);
}

TEST(MedianOfPassesTest, MedianPerCaseOverThePassesThatMeasuredIt) {
  const std::vector<std::vector<Measurement>> passes = {
      {{"weft", Collective::kAllReduce, 2, 8, 10.0, 5}, {"gloo", Collective::kAllReduce, 2, 8, 1.0, 9}},
      {{"weft", Collective::kAllReduce, 2, 8, 30.0, 6}, {"gloo", Collective::kAllReduce, 2, 8, 50.0, 8}},
      {{"weft", Collective::kAllReduce, 2, 8, 20.0, 7}},  // gloo failed in this pass
  };
  const std::vector<Measurement> median = MedianOfPasses(passes);
  ASSERT_EQ(median.size(), 2u);
  // Odd count: the middle pass, with its own iteration count.
  EXPECT_EQ(median[0].library, "weft");
  EXPECT_EQ(median[0].time_us, 20.0);
  EXPECT_EQ(median[0].iterations, 7);
  // Even count: the mean of the middle two, not the lucky 1.0 a best-of would keep.
  EXPECT_EQ(median[1].library, "gloo");
  EXPECT_EQ(median[1].time_us, 25.5);
  EXPECT_EQ(median[0].cpu_us, 0);  // not measured in these passes
  // CPU follows the time: the median pass's, or the mean of the middle two.
  const std::vector<Measurement> with_cpu = MedianOfPasses({
      {{"weft", Collective::kAllReduce, 2, 8, 10.0, 5, 30.0}},
      {{"weft", Collective::kAllReduce, 2, 8, 30.0, 5, 70.0}},
  });
  ASSERT_EQ(with_cpu.size(), 1u);
  EXPECT_EQ(with_cpu[0].cpu_us, 50.0);
  EXPECT_TRUE(MedianOfPasses({}).empty());
}

TEST(FormatBytesTest, BinaryUnits) {
  EXPECT_EQ(FormatBytes(8), "8 B");
  EXPECT_EQ(FormatBytes(65536), "64 KiB");
  EXPECT_EQ(FormatBytes(256u << 20), "256 MiB");
  EXPECT_EQ(FormatBytes(1000), "1000 B");
}

std::vector<Measurement> Sample() {
  return {
      {"weft", Collective::kAllReduce, 2, 8, 10.0, 100},
      {"gloo", Collective::kAllReduce, 2, 8, 20.0, 100},
      {"weft", Collective::kAllReduce, 2, 1 << 20, 1000.0, 10},
      {"gloo", Collective::kAllReduce, 2, 1 << 20, 800.0, 10},
      {"weft", Collective::kAllToAll, 4, 65536, 50.0, 10},
      {"gloo", Collective::kAllToAll, 4, 65536, 50.0, 10},
  };
}

TEST(CheckTargetsTest, CountsCasesAndWorstRatios) {
  TargetCheck check = CheckTargets(Sample(), "weft", "gloo", 1 << 20, 64 << 10);
  EXPECT_EQ(check.bandwidth_cases, 1);
  EXPECT_EQ(check.bandwidth_met, 0);
  EXPECT_DOUBLE_EQ(check.worst_bandwidth_ratio, 0.8);
  EXPECT_EQ(check.latency_cases, 2);
  EXPECT_EQ(check.latency_met, 2);  // 2× faster and a tie
  EXPECT_DOUBLE_EQ(check.worst_latency_ratio, 1.0);
}

TEST(CheckTargetsTest, OtherCollectivesAreCheckedApartFromTheTargetsEachOnItsOwn) {
  std::vector<Measurement> all = Sample();
  all.push_back({"weft", Collective::kAllGather, 4, 4 << 20, 100.0, 10});
  all.push_back({"gloo", Collective::kAllGather, 4, 4 << 20, 50.0, 10});
  all.push_back({"weft", Collective::kAllGather, 4, 4096, 10.0, 10});
  all.push_back({"gloo", Collective::kAllGather, 4, 4096, 30.0, 10});
  all.push_back({"weft", Collective::kReduceScatter, 4, 4 << 20, 100.0, 10});
  all.push_back({"gloo", Collective::kReduceScatter, 4, 4 << 20, 150.0, 10});
  all.push_back({"weft", Collective::kReduceScatter, 4, 16 << 20, 100.0, 10});
  all.push_back({"gloo", Collective::kReduceScatter, 4, 16 << 20, 125.0, 10});
  // The targets are unchanged by the other collectives' cases.
  TargetCheck targets = CheckTargets(all, "weft", "gloo", 1 << 20, 64 << 10);
  EXPECT_EQ(targets.bandwidth_cases, 1);
  EXPECT_EQ(targets.latency_cases, 2);
  TargetCheck beyond = CheckTargets(all, "weft", "gloo", 1 << 20, 64 << 10, Collective::kAllGather);
  EXPECT_EQ(beyond.bandwidth_cases, 1);
  EXPECT_EQ(beyond.bandwidth_met, 0);
  EXPECT_DOUBLE_EQ(beyond.worst_bandwidth_ratio, 0.5);
  EXPECT_EQ(beyond.latency_cases, 1);
  EXPECT_DOUBLE_EQ(beyond.worst_latency_ratio, 3.0);

  ReportText text;
  text.libraries = {"weft", "gloo"};
  text.library_labels = {"Weft", "Gloo"};
  const std::string lines = RenderTargetLines(text, all);
  EXPECT_NE(lines.find("- vs Gloo: bus bandwidth at 1 MiB and above at least Gloo's in 0 of 1 "
                       "cases (worst 0.80×); latency from 8 B to 64 KiB at most Gloo's in 2 of "
                       "2 cases"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("- beyond the targets (all-gather), vs Gloo: bus bandwidth at 1 MiB and "
                       "above at least Gloo's in 0 of 1 cases (worst 0.50×); latency from 8 B "
                       "to 64 KiB at most Gloo's in 1 of 1 cases (worst 3.00×)."),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find("- beyond the targets (reduce-scatter), vs Gloo: bus bandwidth at 1 MiB "
                       "and above at least Gloo's in 2 of 2 cases (worst 1.25×); latency from 8 B "
                       "to 64 KiB at most Gloo's in 0 of 0 cases"),
            std::string::npos)
      << lines;
  EXPECT_EQ(lines.find("all-gather, reduce-scatter"), std::string::npos) << lines;
  // MPI measured all-gather but not reduce-scatter: no reduce-scatter line for it.
  all.push_back({"mpi", Collective::kAllGather, 4, 4 << 20, 100.0, 10});
  text.libraries.push_back("mpi");
  text.library_labels.push_back("MPI");
  const std::string with_mpi = RenderTargetLines(text, all);
  EXPECT_NE(with_mpi.find("- beyond the targets (all-gather), vs MPI: bus bandwidth at 1 MiB and "
                          "above at least MPI's in 1 of 1 cases"),
            std::string::npos)
      << with_mpi;
  EXPECT_EQ(with_mpi.find("(reduce-scatter), vs MPI"), std::string::npos) << with_mpi;
  // Shortfalls and the CPU comparison stay with the targets.
  EXPECT_EQ(RenderShortfalls(text, all, {all}, "gloo", 1 << 20, 64 << 10).find("all-gather"),
            std::string::npos);
  EXPECT_EQ(RenderTargetLines(text, Sample()).find("beyond"), std::string::npos);
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(Collective::kAllGather, 4, 4'000'000, 1000), 3.0);
  EXPECT_DOUBLE_EQ(BusBandwidthGBps(Collective::kReduceScatter, 4, 4'000'000, 1000), 3.0);
}

TEST(RenderMarkdownTest, TablesRatiosAndMissingCells) {
  ReportText text;
  text.title = "Data path";
  text.preamble = {"Setup."};
  text.libraries = {"weft", "gloo", "mpi"};
  text.library_labels = {"Weft", "Gloo", "MPI"};
  const std::string md = RenderMarkdown(text, Sample());
  EXPECT_NE(md.find("## Data path\n\nSetup.\n\n"), std::string::npos) << md;
  EXPECT_NE(md.find("### all-reduce, 2 ranks"), std::string::npos);
  EXPECT_NE(md.find("### all-to-all, 4 ranks"), std::string::npos);
  EXPECT_NE(md.find("| size | Weft µs | Gloo µs | MPI µs | Weft busbw GB/s | Gloo busbw GB/s | "
                    "MPI busbw GB/s | Weft vs Gloo | Weft vs MPI |"),
            std::string::npos)
      << md;
  // 8 B: Weft 10 µs, Gloo 20 µs, no MPI figure: 2.00× and a dash.
  EXPECT_NE(md.find("| 8 B | 10.0 | 20.0 | – | 0.001 | 0.000 | – | 2.00× | – |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- vs Gloo: bus bandwidth at 1 MiB and above at least Gloo's in 0 of 1"),
            std::string::npos)
      << md;
}

TEST(RenderShortfallsTest, NamesEachCaseBelowABaselineWithItsPerPassRatios) {
  constexpr size_t kMiB = 1 << 20;
  auto m = [](const char* library, Collective c, size_t bytes, double us) {
    return Measurement{library, c, 8, bytes, us, 3, 20 * us};
  };
  // 16 MiB all-to-all: below Gloo in two passes of three, above in one. 4 MiB all-reduce:
  // above in every pass. 256 KiB: between the latency and bandwidth ranges, not checked.
  // 8 B all-reduce (latency range): measured in the first pass only, below Gloo.
  const std::vector<std::vector<Measurement>> passes = {
      {m("weft", Collective::kAllToAll, 16 * kMiB, 100), m("gloo", Collective::kAllToAll, 16 * kMiB, 90),
       m("weft", Collective::kAllReduce, 4 * kMiB, 10), m("gloo", Collective::kAllReduce, 4 * kMiB, 20),
       m("weft", Collective::kAllReduce, 256 << 10, 10), m("gloo", Collective::kAllReduce, 256 << 10, 5),
       m("weft", Collective::kAllReduce, 8, 10), m("gloo", Collective::kAllReduce, 8, 8)},
      {m("weft", Collective::kAllToAll, 16 * kMiB, 100), m("gloo", Collective::kAllToAll, 16 * kMiB, 110),
       m("weft", Collective::kAllReduce, 4 * kMiB, 10), m("gloo", Collective::kAllReduce, 4 * kMiB, 12)},
      {m("weft", Collective::kAllToAll, 16 * kMiB, 100), m("gloo", Collective::kAllToAll, 16 * kMiB, 95),
       m("weft", Collective::kAllReduce, 4 * kMiB, 10), m("gloo", Collective::kAllReduce, 4 * kMiB, 30)},
  };
  ReportText text;
  text.libraries = {"weft", "gloo"};
  text.library_labels = {"Weft", "Gloo"};
  const std::string lines =
      RenderShortfalls(text, MedianOfPasses(passes), passes, "gloo", kMiB, 64 << 10);
  EXPECT_EQ(lines,
            "- below Gloo: all-reduce, 8 ranks, 8 B: 0.80× (by pass: 0.80; at least Gloo's in 0 "
            "of 1 passes; CPU per operation, all ranks: Weft 200 µs, Gloo 160 µs)\n"
            "- below Gloo: all-to-all, 8 ranks, 16 MiB: 0.95× (by pass: 0.90, 1.10, 0.95; at "
            "least Gloo's in 1 of 3 passes; CPU per operation, all ranks: Weft 2.0 ms, Gloo "
            "1.9 ms)\n");
  // CPU: 20× each time in every case, so equal ratios for the like-for-like cases.
  EXPECT_EQ(RenderCpuComparison(text, MedianOfPasses(passes), "gloo", kMiB),
            "Weft's CPU per operation (every rank's process, user and kernel) from 1 MiB is "
            "0.50-1.05× Gloo's (median 0.78×, 2 cases).\n");
  // Nothing below (the second pass alone): nothing said.
  EXPECT_EQ(RenderShortfalls(text, MedianOfPasses({passes[1]}), {passes[1]}, "gloo", kMiB, 64 << 10),
            "");
}

}  // namespace
}  // namespace weft::bench
