// Gloo as a CollectiveLibrary for weft-perf: its TCP transport, a FileStore rendezvous,
// gloo::allreduce (ring), gloo::alltoall and gloo::allgather (ring); no reduce-scatter
// (UNIMPLEMENTED, saying why). Gloo reports failures by throwing; they are caught here
// and returned as statuses.
//
// Thread-compatible: one rank per object, one call at a time.
#ifndef WEFT_BENCH_DATAPATH_GLOO_LIBRARY_H_
#define WEFT_BENCH_DATAPATH_GLOO_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/datapath/sweep.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace weft::bench {

// "0.5.0": the Gloo headers' version.
std::string GlooVersion();

class GlooLibrary : public CollectiveLibrary {
 public:
  // Connects rank `rank` of `ranks` through a FileStore in `store_dir`, over TCP on
  // `host`.
  static absl::StatusOr<std::unique_ptr<GlooLibrary>> Connect(int rank, int ranks,
                                                              const std::string& store_dir,
                                                              const std::string& host,
                                                              absl::Duration timeout);

  absl::Status AllReduceSum(float* data, size_t count) override;
  absl::Status AllToAll(const float* input, float* output, size_t count_per_rank) override;
  absl::Status AllGather(const float* input, float* output, size_t count_per_rank) override;
  absl::Status ReduceScatterSum(float* input, float* output, size_t count_per_rank) override;
  absl::StatusOr<double> MaxOverRanks(double value) override;
  absl::StatusOr<double> SumOverRanks(double value) override;

 private:
  absl::StatusOr<double> Reduce(double value, void (*reduce)(void*, const void*, const void*,
                                                             size_t),
                                const char* name);
  explicit GlooLibrary(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace weft::bench

#endif  // WEFT_BENCH_DATAPATH_GLOO_LIBRARY_H_
