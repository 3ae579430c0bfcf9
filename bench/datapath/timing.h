// The timing loop every library in weft-perf runs under, so the numbers compare like
// for like: a probe run (which also warms up: buffers touched, connections busy) whose
// slowest-rank time sets how many runs fit the per-size budget (the same count on
// every rank), then those runs in `batches` batches. Each batch's result is the slowest
// rank's mean time per run; the reported time is the best batch. One batch gives the mean
// over every run, as nccl-tests report; more batches keep a burst of unrelated load out of
// the figure, but also favour a library whose times spread (its best batch is luckier).
// Beside the time, the CPU the ranks' processes spent per run (every thread, user and
// kernel: on loopback the kernel's copies are most of it), summed over the ranks: where
// the ranks outnumber the cores, both libraries may be bound by the same copying, and
// equal CPU per run says so.
//
// Thread-compatible: one call at a time per rank.
#ifndef WEFT_BENCH_DATAPATH_TIMING_H_
#define WEFT_BENCH_DATAPATH_TIMING_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/datapath/perf_report.h"

namespace weft::bench {

struct TimingPolicy {
  double budget_seconds = 0.25;  // per size, after warm-up and probe
  int min_iterations = 1;
  int max_iterations = 1000;
  int warmup_iterations = 0;  // extra untimed runs before the probe
  int batches = 5;
};

struct Timing {
  double time_us = 0;
  int iterations = 0;
  double cpu_us = 0;  // all ranks' CPU time per run, in the reported batch
};

// CLOCK_PROCESS_CPUTIME_ID in seconds.
double ProcessCpuSeconds();

// The collective under test, as a library offers it.
struct CollectiveHooks {
  std::function<absl::Status()> run_once;
  // All ranks' maximum / sum of `value` (the library's own all-reduce); also barriers.
  // Without sum_over_ranks the CPU is not measured (cpu_us 0).
  std::function<absl::StatusOr<double>(double value)> max_over_ranks;
  std::function<absl::StatusOr<double>(double value)> sum_over_ranks;
  // This rank's CPU seconds so far (every thread of its process).
  std::function<double()> cpu_seconds = ProcessCpuSeconds;
};

absl::StatusOr<Timing> TimeCollective(const CollectiveHooks& hooks, const TimingPolicy& policy);

// The sizes weft-perf sweeps: 8 B × 8^k up to 4 KiB, then 32 KiB, 64 KiB, 256 KiB and
// powers of 4 up to `max_bytes`.
std::vector<size_t> SweepSizes(size_t max_bytes);

// All-to-all, all-gather and reduce-scatter move whole float32 elements per rank:
// their per-rank buffer (all-to-all's send buffer, all-gather's output,
// reduce-scatter's input) is `bytes` rounded up to a multiple of 4 × ranks.
size_t WholeFloatsPerRankBytes(size_t bytes, int ranks);

// One measurement per line between a rank-0 worker and weft-perf:
//   <library> <collective name, as CollectiveName> <ranks> <bytes> <time_us> <iterations> <cpu_us>
// Lines starting with '#' are notes and skipped.
std::string SerializeMeasurement(const Measurement& m);
absl::StatusOr<std::vector<Measurement>> ParseMeasurements(const std::string& text);

// Every pass of a run (weft-perf --raw_out), each after a line "# pass N" (N from 1);
// other '#' lines are notes. Parsing fails on a measurement before the first pass line.
std::string SerializePasses(const std::vector<std::vector<Measurement>>& passes);
absl::StatusOr<std::vector<std::vector<Measurement>>> ParsePasses(const std::string& text);

}  // namespace weft::bench

#endif  // WEFT_BENCH_DATAPATH_TIMING_H_
