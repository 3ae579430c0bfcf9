#include "bench/datapath/sweep.h"

#include <cstring>
#include <memory>
#include <vector>

#include "bench/datapath/weft_library.h"
#include "datapath/collectives.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"

namespace weft::bench {
namespace {

// A one-rank "library" that can be told to skip work.
enum class Skip { kNothing, kAllReduce, kAllGather, kReduceScatter };
class LocalLibrary : public CollectiveLibrary {
 public:
  explicit LocalLibrary(Skip skip) : skip_(skip) {}
  absl::Status AllReduceSum(float* data, size_t count) override {
    if (skip_ == Skip::kAllReduce) std::memset(data, 0, count * sizeof(float));
    return absl::OkStatus();
  }
  absl::Status AllToAll(const float* input, float* output, size_t count) override {
    std::memcpy(output, input, count * sizeof(float));
    return absl::OkStatus();
  }
  absl::Status AllGather(const float* input, float* output, size_t count) override {
    // Skipping: only the first half of the block arrives.
    std::memcpy(output, input, (skip_ == Skip::kAllGather ? count / 2 : count) * sizeof(float));
    return absl::OkStatus();
  }
  absl::Status ReduceScatterSum(float* input, float* output, size_t count) override {
    // Skipping: the last element is left as it was.
    std::memcpy(output, input, (skip_ == Skip::kReduceScatter ? count - 1 : count) * sizeof(float));
    return absl::OkStatus();
  }
  absl::StatusOr<double> MaxOverRanks(double value) override { return value; }
  absl::StatusOr<double> SumOverRanks(double value) override { return value; }

 private:
  Skip skip_;
};

SweepConfig OneRank() {
  SweepConfig config;
  config.sizes = {8, 4096};
  config.policy.budget_seconds = 0.001;
  return config;
}

TEST(RunSweepTest, MeasuresEverySizeOfEachCollectiveAskedFor) {
  LocalLibrary library(Skip::kNothing);
  auto measurements = RunSweep(OneRank(), "local", library);
  ASSERT_TRUE(measurements.ok()) << measurements.status();
  ASSERT_EQ(measurements->size(), 4u);  // all-gather and reduce-scatter are off by default
  EXPECT_EQ((*measurements)[0].collective, Collective::kAllReduce);
  EXPECT_EQ((*measurements)[1].bytes, 4096u);
  EXPECT_EQ((*measurements)[3].collective, Collective::kAllToAll);
  EXPECT_GE((*measurements)[0].iterations, 2);

  SweepConfig only_all_gather = OneRank();
  only_all_gather.all_reduce = only_all_gather.all_to_all = false;
  only_all_gather.all_gather = true;
  measurements = RunSweep(only_all_gather, "local", library);
  ASSERT_TRUE(measurements.ok()) << measurements.status();
  ASSERT_EQ(measurements->size(), 2u);
  EXPECT_EQ((*measurements)[0].collective, Collective::kAllGather);
  EXPECT_EQ((*measurements)[1].bytes, 4096u);
}

TEST(RunSweepTest, AWrongResultFailsTheSweep) {
  LocalLibrary lazy(Skip::kAllReduce);
  auto measurements = RunSweep(OneRank(), "lazy", lazy);
  EXPECT_EQ(measurements.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(measurements.status().message().find("element 0 is 0, want 1"), std::string::npos)
      << measurements.status();

  SweepConfig all_gather = OneRank();
  all_gather.all_gather = true;
  LocalLibrary half(Skip::kAllGather);
  measurements = RunSweep(all_gather, "half", half);
  EXPECT_EQ(measurements.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(measurements.status().message().find("all-gather: block of rank 0 element 1 holds -1"),
            std::string::npos)
      << measurements.status();

  SweepConfig reduce_scatter = OneRank();
  reduce_scatter.reduce_scatter = true;
  LocalLibrary short_one(Skip::kReduceScatter);
  measurements = RunSweep(reduce_scatter, "short", short_one);
  EXPECT_EQ(measurements.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(measurements.status().message().find(
                "reduce-scatter: element 1 of rank 0's block holds -1, want 0"),
            std::string::npos)
      << measurements.status();
}

TEST(RunSweepTest, WeftOverTcpPassesItsOwnChecks) {
  auto transports = datapath::MakeTcpTransports(3);
  ASSERT_TRUE(transports.ok());
  std::vector<std::unique_ptr<datapath::Communicator>> comms;
  for (auto& t : *transports) comms.push_back(*datapath::Communicator::Create(std::move(t)));
  datapath::RunRanks(3, [&](int rank) {
    SweepConfig config = OneRank();
    config.rank = rank;
    config.ranks = 3;
    config.sizes = {8, 100000};
    config.all_gather = true;
    config.reduce_scatter = true;
    WeftLibrary library(*comms[rank]);
    auto measurements = RunSweep(config, "weft", library);
    ASSERT_TRUE(measurements.ok()) << measurements.status();
    ASSERT_EQ(measurements->size(), 8u);
    EXPECT_EQ((*measurements)[2].bytes, 12u);  // all-to-all: 8 B rounded up to 1 float × 3 ranks
    EXPECT_EQ((*measurements)[4].collective, Collective::kAllGather);
    EXPECT_EQ((*measurements)[5].bytes, 100008u);  // 100000 B: 8334 floats × 3 ranks
    EXPECT_EQ((*measurements)[7].collective, Collective::kReduceScatter);
    EXPECT_EQ((*measurements)[7].bytes, 100008u);
    // The three ranks are threads of this one process, so each rank's process CPU
    // counts all three: the sum is at least the CPU of one run.
    for (const Measurement& m : *measurements) EXPECT_GT(m.cpu_us, 0) << m.bytes;
  });
}

}  // namespace
}  // namespace weft::bench
