// weft-perf's numbers and its markdown: bandwidth formulas as nccl-tests define them,
// the per-size tables (Weft next to Gloo and Open MPI, with ratios), and the check of
// the targets. Pure functions over measurements; thread-safe.
//
//   algbw = bytes / time
//   busbw = algbw × 2(n−1)/n   all-reduce  (each rank sends and receives that much)
//   busbw = algbw × (n−1)/n    all-to-all, all-gather, reduce-scatter
// where bytes is the per-rank buffer (all-reduce), the per-rank send buffer
// (all-to-all), the per-rank output buffer (all-gather: every rank's block) or the
// per-rank input buffer (reduce-scatter: every rank's block), n the rank count, and
// 1 GB/s = 1e9 bytes per second.
#ifndef WEFT_BENCH_DATAPATH_PERF_REPORT_H_
#define WEFT_BENCH_DATAPATH_PERF_REPORT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace weft::bench {

enum class Collective { kAllReduce, kAllToAll, kAllGather, kReduceScatter };
inline constexpr Collective kAllCollectives[] = {Collective::kAllReduce, Collective::kAllToAll,
                                                 Collective::kAllGather,
                                                 Collective::kReduceScatter};

// "all-reduce", "all-to-all", "all-gather", "reduce-scatter".
const char* CollectiveName(Collective collective);
// "all-gather" -> kAllGather; false for anything else.
bool ParseCollective(absl::string_view name, Collective* collective);

struct Measurement {
  std::string library;  // "weft", "gloo", "mpi"
  Collective collective = Collective::kAllReduce;
  int ranks = 0;
  size_t bytes = 0;
  double time_us = 0;  // slowest rank's mean per operation
  int iterations = 0;
  double cpu_us = 0;  // every rank's CPU time per operation, summed; 0: not measured
};

// Merges `more` into `all`: a measurement of a new (library, collective, ranks, bytes)
// is added; one already there is replaced if `more` has the shorter time.
void KeepBest(std::vector<Measurement>& all, const std::vector<Measurement>& more);

// Each (library, collective, ranks, bytes)'s median time over the passes that measured
// it (an even count takes the mean of the middle two; iterations are the median pass's
// or the smaller middle one's). On a shared machine the best pass rewards the library
// whose times spread the most, since its lucky pass is luckier; the median compares
// what each library does typically.
std::vector<Measurement> MedianOfPasses(const std::vector<std::vector<Measurement>>& passes);

double AlgBandwidthGBps(size_t bytes, double time_us);
double BusBandwidthGBps(Collective collective, int ranks, size_t bytes, double time_us);

// "8 B", "64 KiB", "256 MiB".
std::string FormatBytes(size_t bytes);

// The targets: bus bandwidth at least the baseline's from 1 MiB, latency at
// most the baseline's up to 64 KiB, for all-reduce and all-to-all. Other collectives
// (all-gather, reduce-scatter) are measured and checked the same way, but reported
// apart, each on its own.
inline constexpr size_t kBandwidthTargetFromBytes = size_t{1} << 20;
inline constexpr size_t kLatencyTargetUpToBytes = size_t{64} << 10;
bool IsTargetCollective(Collective collective);

// How Weft fares against one baseline on the targets: bus bandwidth at least
// the baseline's from `bandwidth_from_bytes` up, latency at most the baseline's up to
// `latency_up_to_bytes`, over the target collectives (`only` unset) or over `only`.
// Ratios are baseline time / Weft time (above 1: Weft faster).
struct TargetCheck {
  int bandwidth_cases = 0;
  int bandwidth_met = 0;
  double worst_bandwidth_ratio = 0;
  int latency_cases = 0;
  int latency_met = 0;
  double worst_latency_ratio = 0;
};
TargetCheck CheckTargets(const std::vector<Measurement>& measurements, const std::string& weft,
                         const std::string& baseline, size_t bandwidth_from_bytes,
                         size_t latency_up_to_bytes,
                         std::optional<Collective> only = std::nullopt);

struct ReportText {
  std::string title;
  std::vector<std::string> preamble;   // paragraphs before the tables
  std::vector<std::string> libraries;  // column order; the first is Weft
  std::vector<std::string> library_labels;
};

// One table per (collective, rank count): time and bus bandwidth per library, and
// Weft's speed-up over each other library; then the target check.
std::string RenderMarkdown(const ReportText& text, const std::vector<Measurement>& measurements);

// The target check alone: one "- vs <library>: ..." line per baseline, then, if other
// collectives were measured, one "- beyond the targets (all-gather), vs <library>: ..."
// line per such collective and baseline that measured it.
std::string RenderTargetLines(const ReportText& text,
                              const std::vector<Measurement>& measurements);

// Every case of the target check (target collectives only) where Weft is below
// `baseline` (from `bandwidth_from_bytes` up, and up to `latency_up_to_bytes`), one line
// each, with the ratio in each pass that measured both libraries: on a shared machine a
// figure below 1× may come from one library's unlucky passes or from every pass, and
// only the per-pass ratios tell which. "" when Weft is at least the baseline everywhere.
//   - below Gloo: all-to-all, 8 ranks, 16 MiB: 0.97× (by pass: 0.95, 1.02, ...; at
//     least Gloo's in 2 of 5 passes; CPU per operation, all ranks: Weft 57.1 ms, Gloo
//     53.6 ms)
std::string RenderShortfalls(const ReportText& text, const std::vector<Measurement>& measurements,
                             const std::vector<std::vector<Measurement>>& passes,
                             const std::string& baseline, size_t bandwidth_from_bytes,
                             size_t latency_up_to_bytes);

// Weft's CPU per operation over `baseline`'s, across the target collectives' cases from
// `from_bytes` up where both were measured: "Weft's CPU per operation (every rank's process, user and
// kernel) from 1 MiB is 0.91-1.07× Gloo's (median 0.99×, 14 cases)." "" when no case
// has both.
std::string RenderCpuComparison(const ReportText& text,
                                const std::vector<Measurement>& measurements,
                                const std::string& baseline, size_t from_bytes);

}  // namespace weft::bench

#endif  // WEFT_BENCH_DATAPATH_PERF_REPORT_H_
