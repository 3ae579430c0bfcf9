// The per-rank body of weft-perf, shared by every library: for each size, time
// all-reduce (float32 sum, in place), all-to-all, all-gather and reduce-scatter
// (float32, sum) under one
// TimingPolicy, then run each once more on known data and check the result, so a
// library that skips work cannot look fast.
//
// Thread-compatible: one sweep per rank at a time.
#ifndef WEFT_BENCH_DATAPATH_SWEEP_H_
#define WEFT_BENCH_DATAPATH_SWEEP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/datapath/perf_report.h"
#include "bench/datapath/timing.h"

namespace weft::bench {

// What a library must offer the sweep.
class CollectiveLibrary {
 public:
  virtual ~CollectiveLibrary() = default;
  virtual absl::Status AllReduceSum(float* data, size_t count) = 0;
  // input and output hold ranks × count_per_rank floats.
  virtual absl::Status AllToAll(const float* input, float* output, size_t count_per_rank) = 0;
  // input holds count_per_rank floats, output ranks × count_per_rank.
  virtual absl::Status AllGather(const float* input, float* output, size_t count_per_rank) = 0;
  // input holds ranks × count_per_rank floats and may be overwritten (Gloo reduces in
  // place); output gets count_per_rank floats, the sum of every rank's block `rank`.
  virtual absl::Status ReduceScatterSum(float* input, float* output, size_t count_per_rank) = 0;
  virtual absl::StatusOr<double> MaxOverRanks(double value) = 0;
  virtual absl::StatusOr<double> SumOverRanks(double value) = 0;
};

struct SweepConfig {
  int rank = 0;
  int ranks = 1;
  std::vector<size_t> sizes;
  bool all_reduce = true;
  bool all_to_all = true;
  bool all_gather = false;
  bool reduce_scatter = false;
  TimingPolicy policy;
};

// Measurements labelled `library` (meaningful on every rank; rank 0 reports them).
absl::StatusOr<std::vector<Measurement>> RunSweep(const SweepConfig& config,
                                                  const std::string& library,
                                                  CollectiveLibrary& ops);

}  // namespace weft::bench

#endif  // WEFT_BENCH_DATAPATH_SWEEP_H_
