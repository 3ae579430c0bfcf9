// Weft's Communicator as a CollectiveLibrary for weft-perf. Thread-compatible.
#ifndef WEFT_BENCH_DATAPATH_WEFT_LIBRARY_H_
#define WEFT_BENCH_DATAPATH_WEFT_LIBRARY_H_

#include "bench/datapath/sweep.h"
#include "datapath/collectives.h"

namespace weft::bench {

class WeftLibrary : public CollectiveLibrary {
 public:
  explicit WeftLibrary(datapath::Communicator& comm) : comm_(comm) {}

  absl::Status AllReduceSum(float* data, size_t count) override {
    return comm_.AllReduce(data, count, datapath::DataType::kFloat32, datapath::ReduceOp::kSum);
  }
  absl::Status AllToAll(const float* input, float* output, size_t count_per_rank) override {
    return comm_.AllToAll(input, output, count_per_rank, datapath::DataType::kFloat32);
  }
  absl::Status AllGather(const float* input, float* output, size_t count_per_rank) override {
    return comm_.AllGather(input, output, count_per_rank, datapath::DataType::kFloat32);
  }
  absl::Status ReduceScatterSum(float* input, float* output, size_t count_per_rank) override {
    return comm_.ReduceScatter(input, output, count_per_rank, datapath::DataType::kFloat32,
                               datapath::ReduceOp::kSum);
  }
  absl::StatusOr<double> MaxOverRanks(double value) override {
    return Reduce(value, datapath::ReduceOp::kMax);
  }
  absl::StatusOr<double> SumOverRanks(double value) override {
    return Reduce(value, datapath::ReduceOp::kSum);
  }

 private:
  absl::StatusOr<double> Reduce(double value, datapath::ReduceOp op) {
    absl::Status status = comm_.AllReduce(&value, 1, datapath::DataType::kFloat64, op);
    if (!status.ok()) return status;
    return value;
  }

  datapath::Communicator& comm_;
};

}  // namespace weft::bench

#endif  // WEFT_BENCH_DATAPATH_WEFT_LIBRARY_H_
