// weft_perf_mpi: the Open MPI side of weft-perf, one process per rank under mpirun.
// Runs the same sweep as the other libraries (bench/datapath/sweep.h) over
// MPI_Allreduce / MPI_Alltoall / MPI_Allgather / MPI_Reduce_scatter_block and prints
// rank 0's measurements, one per line.
#include <mpi/mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/datapath/sweep.h"
#include "bench/datapath/timing.h"

ABSL_FLAG(std::string, sizes, "8", "Comma-separated sizes in bytes.");
ABSL_FLAG(double, budget_seconds, 0.25, "Timed seconds per size.");
ABSL_FLAG(int, min_iterations, 2, "Fewest timed runs per size.");
ABSL_FLAG(int, batches, 5, "Batches the timed runs are split into (best batch wins).");
ABSL_FLAG(int, max_iterations, 1000, "Most timed runs per size.");
ABSL_FLAG(bool, all_reduce, true, "Sweep all-reduce.");
ABSL_FLAG(bool, all_to_all, true, "Sweep all-to-all.");
ABSL_FLAG(bool, all_gather, false, "Sweep all-gather.");
ABSL_FLAG(bool, reduce_scatter, false, "Sweep reduce-scatter.");

namespace weft::bench {
namespace {

class MpiLibrary : public CollectiveLibrary {
 public:
  absl::Status AllReduceSum(float* data, size_t count) override {
    return Check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD),
                 "MPI_Allreduce");
  }
  absl::Status AllToAll(const float* input, float* output, size_t count_per_rank) override {
    const int count = static_cast<int>(count_per_rank);
    return Check(MPI_Alltoall(input, count, MPI_FLOAT, output, count, MPI_FLOAT, MPI_COMM_WORLD),
                 "MPI_Alltoall");
  }
  absl::Status AllGather(const float* input, float* output, size_t count_per_rank) override {
    const int count = static_cast<int>(count_per_rank);
    return Check(MPI_Allgather(input, count, MPI_FLOAT, output, count, MPI_FLOAT, MPI_COMM_WORLD),
                 "MPI_Allgather");
  }
  absl::Status ReduceScatterSum(float* input, float* output, size_t count_per_rank) override {
    return Check(MPI_Reduce_scatter_block(input, output, static_cast<int>(count_per_rank),
                                          MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                 "MPI_Reduce_scatter_block");
  }
  absl::StatusOr<double> MaxOverRanks(double value) override { return Reduce(value, MPI_MAX); }
  absl::StatusOr<double> SumOverRanks(double value) override { return Reduce(value, MPI_SUM); }

 private:
  static absl::StatusOr<double> Reduce(double value, MPI_Op op) {
    absl::Status status =
        Check(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, op, MPI_COMM_WORLD),
              "MPI_Allreduce");
    if (!status.ok()) return status;
    return value;
  }
  static absl::Status Check(int code, const char* call) {
    if (code == MPI_SUCCESS) return absl::OkStatus();
    return absl::InternalError(std::string(call) + " failed");
  }
};

int Main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  absl::ParseCommandLine(argc, argv);
  SweepConfig config;
  MPI_Comm_rank(MPI_COMM_WORLD, &config.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &config.ranks);
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',', absl::SkipEmpty())) {
    size_t bytes = 0;
    if (!absl::SimpleAtoi(s, &bytes)) {
      std::fprintf(stderr, "bad size '%s'\n", std::string(s).c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    config.sizes.push_back(bytes);
  }
  config.all_reduce = absl::GetFlag(FLAGS_all_reduce);
  config.all_to_all = absl::GetFlag(FLAGS_all_to_all);
  config.all_gather = absl::GetFlag(FLAGS_all_gather);
  config.reduce_scatter = absl::GetFlag(FLAGS_reduce_scatter);
  config.policy.budget_seconds = absl::GetFlag(FLAGS_budget_seconds);
  config.policy.min_iterations = absl::GetFlag(FLAGS_min_iterations);
  config.policy.batches = absl::GetFlag(FLAGS_batches);
  config.policy.max_iterations = absl::GetFlag(FLAGS_max_iterations);
  MpiLibrary mpi;
  absl::StatusOr<std::vector<Measurement>> measurements = RunSweep(config, "mpi", mpi);
  if (!measurements.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", config.rank, measurements.status().ToString().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (config.rank == 0) {
    for (const Measurement& m : *measurements) std::fputs(SerializeMeasurement(m).c_str(), stdout);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::Main(argc, argv); }
