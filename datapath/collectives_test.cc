// Collectives against a reference computed here, for many sizes (zero, one element,
// counts not divisible by the rank count, sizes across every algorithm switch), every
// dtype and op, 2, 3, 4 and 8 ranks, over TCP (loopback) and RC (fake verbs). Ranks
// are threads. Small thresholds and segments make modest sizes exercise every path
// (recursive doubling with folded ranks, segmented rings, tree and chain broadcast).
#include "datapath/collectives.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "datapath/transport/transport_test_util.h"
#include "gtest/gtest.h"

namespace weft::datapath {
namespace {

CommunicatorOptions SmallThresholds() {
  CommunicatorOptions options;
  options.small_allreduce_bytes = 1024;
  // Power-of-two ranks: 1023 4-byte elements by recursive halving, 1023 8-byte ones in
  // two rounds; 4097 by the ring.
  options.halving_allreduce_bytes = 4 << 10;
  options.direct_allreduce_bytes = 16 << 10;  // float32: 1023 elements direct, 4097 ring
  options.small_allgather_bytes = 1024;
  options.small_reduce_scatter_bytes = 1024;
  options.small_broadcast_bytes = 1024;
  options.alltoall_bytes_in_flight = 16 << 10;  // 2000-int32 blocks: two rounds at a time
  options.segment_bytes = 4096;
  options.bucket_bytes = 2048;
  return options;
}

// One job: its transports' owners and one communicator per rank.
struct Job {
  std::optional<FakeRcJob> rc;
  std::vector<std::unique_ptr<Communicator>> comms;
  ~Job() { comms.clear(); }  // before the fake fabric goes
};

std::unique_ptr<Job> MakeJob(const std::string& kind, int size,
                             const CommunicatorOptions& options = SmallThresholds()) {
  auto job = std::make_unique<Job>();
  std::vector<std::unique_ptr<Transport>> transports;
  if (kind == "tcp") {
    auto made = MakeTcpTransports(size);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return job;
    transports = std::move(*made);
  } else {
    RcTransportOptions rc_options;
    rc_options.credits = 8;
    rc_options.eager_bytes = 512;  // segments above this go zero-copy
    auto made = MakeFakeRcJob(size, rc_options);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return job;
    job->rc = std::move(*made);
    transports = std::move(job->rc->transports);
  }
  for (auto& transport : transports) {
    auto comm = Communicator::Create(std::move(transport), options);
    EXPECT_TRUE(comm.ok()) << comm.status();
    job->comms.push_back(std::move(*comm));
  }
  return job;
}

// Small integers: every sum is exact in every dtype (and in bfloat16), so results can
// be compared bit for bit.
double Value(int rank, size_t i) { return static_cast<double>((rank * 7 + i * 3) % 11) - 5.0; }

template <typename T>
std::vector<T> Input(int rank, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<T>(Value(rank, i));
  return v;
}

template <typename T>
std::vector<T> Expected(int size, size_t count, ReduceOp op, size_t offset = 0) {
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    double acc = Value(0, i + offset);
    for (int r = 1; r < size; ++r) {
      const double v = Value(r, i + offset);
      acc = op == ReduceOp::kSum   ? acc + v
            : op == ReduceOp::kMax ? std::max(acc, v)
                                   : std::min(acc, v);
    }
    out[i] = static_cast<T>(acc);
  }
  return out;
}

class CollectivesTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    kind_ = std::get<0>(GetParam());
    size_ = std::get<1>(GetParam());
    job_ = MakeJob(kind_, size_);
    ASSERT_EQ(job_->comms.size(), static_cast<size_t>(size_));
  }

 public:
  Communicator& comm(int rank) { return *job_->comms[rank]; }

 protected:

  std::vector<size_t> Counts() const {
    const size_t n = static_cast<size_t>(size_);
    return {0, 1, 2, 3, 7, n - 1, n, n + 1, 100, 255, 256, 1023, 4097, 30011};
  }

  template <typename T>
  void CheckAllReduce(DataType type) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      for (size_t count : Counts()) {
        const std::vector<T> want = Expected<T>(size_, count, op);
        RunRanks(size_, [&](int rank) {
          std::vector<T> data = Input<T>(rank, count);
          absl::Status status = comm(rank).AllReduce(data.data(), count, type, op);
          ASSERT_TRUE(status.ok()) << status;
          EXPECT_EQ(data, want) << DataTypeName(type) << " " << ReduceOpName(op) << " count "
                                << count << " rank " << rank;
        });
      }
    }
  }

  std::string kind_;
  int size_ = 0;
  std::unique_ptr<Job> job_;
};

TEST_P(CollectivesTest, AllReduceFloat32) { CheckAllReduce<float>(DataType::kFloat32); }
TEST_P(CollectivesTest, AllReduceFloat64) { CheckAllReduce<double>(DataType::kFloat64); }
TEST_P(CollectivesTest, AllReduceInt32) { CheckAllReduce<int32_t>(DataType::kInt32); }
TEST_P(CollectivesTest, AllReduceInt64) { CheckAllReduce<int64_t>(DataType::kInt64); }

TEST_P(CollectivesTest, AllReduceBf16CompressionIsExactOnSmallIntegers) {
  for (size_t count : {size_t{1}, size_t{5}, size_t{200}, size_t{5000}}) {
    const std::vector<float> want = Expected<float>(size_, count, ReduceOp::kSum);
    RunRanks(size_, [&](int rank) {
      std::vector<float> data = Input<float>(rank, count);
      AllReduceOptions options;
      options.bf16_compression = true;
      ASSERT_TRUE(comm(rank)
                      .AllReduce(data.data(), count, DataType::kFloat32, ReduceOp::kSum, options)
                      .ok());
      EXPECT_EQ(data, want) << "count " << count << " rank " << rank;
    });
  }
}

TEST_P(CollectivesTest, AllReduceBf16CompressionAgreesAcrossRanksWithinBf16Precision) {
  for (size_t count : {size_t{37}, size_t{4000}}) {  // one per algorithm
    std::vector<std::vector<float>> inputs(size_), results(size_);
    std::mt19937 random(static_cast<uint32_t>(count));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (auto& input : inputs) {
      input.resize(count);
      for (float& v : input) v = uniform(random);
    }
    RunRanks(size_, [&](int rank) {
      results[rank] = inputs[rank];
      AllReduceOptions options;
      options.bf16_compression = true;
      ASSERT_TRUE(
          comm(rank)
              .AllReduce(results[rank].data(), count, DataType::kFloat32, ReduceOp::kSum, options)
              .ok());
    });
    for (size_t i = 0; i < count; ++i) {
      double exact = 0, magnitude = 0;
      for (int r = 0; r < size_; ++r) {
        exact += inputs[r][i];
        magnitude += std::fabs(inputs[r][i]);
      }
      // Each of the ~log2(n)+1 roundings loses at most 2^-8 of the running magnitude.
      EXPECT_NEAR(results[0][i], exact, magnitude * 4 * std::ldexp(1.0, -8) + 1e-6) << i;
      for (int r = 1; r < size_; ++r) ASSERT_EQ(results[r][i], results[0][i]) << r << " " << i;
    }
  }
}

TEST_P(CollectivesTest, AllReduceCoalescedMatchesOneByOne) {
  // Tensors of mixed sizes, some larger than a bucket (2 KiB here).
  const std::vector<size_t> counts = {1, 0, 17, 300, 600, 2, 5000, 3, 511, 1};
  std::vector<float> want_all;
  size_t offset = 0;
  std::vector<std::vector<float>> want;
  for (size_t c : counts) {
    want.push_back(Expected<float>(size_, c, ReduceOp::kSum, offset));
    offset += c;
  }
  RunRanks(size_, [&](int rank) {
    std::vector<std::vector<float>> tensors;
    std::vector<TensorRef> refs;
    size_t at = 0;
    for (size_t c : counts) {
      std::vector<float> t(c);
      for (size_t i = 0; i < c; ++i) t[i] = static_cast<float>(Value(rank, at + i));
      at += c;
      tensors.push_back(std::move(t));
    }
    for (auto& t : tensors) refs.push_back(TensorRef{t.data(), t.size()});
    ASSERT_TRUE(comm(rank).AllReduceCoalesced(refs, DataType::kFloat32, ReduceOp::kSum).ok());
    for (size_t t = 0; t < counts.size(); ++t) EXPECT_EQ(tensors[t], want[t]) << t;
  });
}

TEST_P(CollectivesTest, ReduceScatter) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{1003}, size_t{3000}}) {
      const std::vector<int64_t> full = Expected<int64_t>(size_, count * size_, op);
      RunRanks(size_, [&](int rank) {
        const std::vector<int64_t> input = Input<int64_t>(rank, count * size_);
        std::vector<int64_t> output(count, -99);
        ASSERT_TRUE(comm(rank)
                        .ReduceScatter(input.data(), output.data(), count, DataType::kInt64, op)
                        .ok());
        const std::vector<int64_t> want(full.begin() + rank * count,
                                        full.begin() + (rank + 1) * count);
        EXPECT_EQ(output, want) << "count " << count << " rank " << rank;
        // In place: the output is this rank's block of the input.
        std::vector<int64_t> in_place = input;
        ASSERT_TRUE(comm(rank)
                        .ReduceScatter(in_place.data(), in_place.data() + rank * count, count,
                                       DataType::kInt64, op)
                        .ok());
        EXPECT_TRUE(std::equal(want.begin(), want.end(), in_place.begin() + rank * count))
            << "in place, count " << count << " rank " << rank;
      });
    }
  }
}

TEST_P(CollectivesTest, AllGather) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{100}, size_t{3001}}) {
    RunRanks(size_, [&](int rank) {
      std::vector<double> input(count);
      for (size_t i = 0; i < count; ++i) input[i] = rank * 1000.0 + static_cast<double>(i);
      std::vector<double> output(count * size_, -1);
      ASSERT_TRUE(
          comm(rank).AllGather(input.data(), output.data(), count, DataType::kFloat64).ok());
      for (int r = 0; r < size_; ++r) {
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(output[r * count + i], r * 1000.0 + static_cast<double>(i))
              << "count " << count << " block " << r << " on rank " << rank;
        }
      }
      // In place: the input is this rank's block of the output.
      std::vector<double> in_place(count * size_, -1);
      std::copy(input.begin(), input.end(), in_place.begin() + rank * count);
      ASSERT_TRUE(comm(rank)
                      .AllGather(in_place.data() + rank * count, in_place.data(), count,
                                 DataType::kFloat64)
                      .ok());
      EXPECT_EQ(in_place, output) << "count " << count << " on rank " << rank;
    });
  }
}

TEST_P(CollectivesTest, Broadcast) {
  for (int root : {0, size_ - 1}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{10}, size_t{200}, size_t{5000}}) {
      RunRanks(size_, [&](int rank) {
        std::vector<int32_t> data(count, rank == root ? 0 : -1);
        if (rank == root) {
          for (size_t i = 0; i < count; ++i) data[i] = static_cast<int32_t>(i * 31 + root);
        }
        ASSERT_TRUE(comm(rank).Broadcast(data.data(), count, DataType::kInt32, root).ok());
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(data[i], static_cast<int32_t>(i * 31 + root))
              << "root " << root << " count " << count << " rank " << rank;
        }
      });
    }
  }
}

TEST_P(CollectivesTest, AllToAll) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{2000}}) {
    RunRanks(size_, [&](int rank) {
      std::vector<int32_t> input(count * size_), output(count * size_, -1);
      for (int to = 0; to < size_; ++to) {
        for (size_t i = 0; i < count; ++i) input[to * count + i] = rank * 10000 + to * 100 + i;
      }
      ASSERT_TRUE(comm(rank).AllToAll(input.data(), output.data(), count, DataType::kInt32).ok());
      for (int from = 0; from < size_; ++from) {
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(output[from * count + i], static_cast<int32_t>(from * 10000 + rank * 100 + i));
        }
      }
    });
  }
}

// Runs AllToAllV where rank `from` sends count(from, to) int64s to rank `to` and checks
// every rank's output.
void CheckAllToAllV(int size, Communicator& comm, int rank,
                    const std::function<size_t(int, int)>& count) {
  std::vector<size_t> send_counts(size), recv_counts(size);
  size_t send_total = 0, recv_total = 0;
  for (int r = 0; r < size; ++r) {
    send_counts[r] = count(rank, r);
    recv_counts[r] = count(r, rank);
    send_total += send_counts[r];
    recv_total += recv_counts[r];
  }
  std::vector<int64_t> input(send_total), output(recv_total, -1);
  size_t at = 0;
  for (int to = 0; to < size; ++to) {
    for (size_t i = 0; i < send_counts[to]; ++i) input[at++] = rank * 1000000 + to * 10000 + i;
  }
  ASSERT_TRUE(
      comm.AllToAllV(input.data(), send_counts, output.data(), recv_counts, DataType::kInt64)
          .ok());
  at = 0;
  for (int from = 0; from < size; ++from) {
    for (size_t i = 0; i < recv_counts[from]; ++i) {
      ASSERT_EQ(output[at++], static_cast<int64_t>(from * 1000000 + rank * 10000 + i));
    }
  }
}

TEST_P(CollectivesTest, AllToAllVWithUnevenAndEmptyBlocks) {
  // Rank s sends (s + 2 d) % 4 * 13 elements to rank d: some blocks are empty.
  auto count = [](int from, int to) { return static_cast<size_t>((from + 2 * to) % 4) * 13; };
  RunRanks(size_, [&](int rank) { CheckAllToAllV(size_, comm(rank), rank, count); });
}

TEST_P(CollectivesTest, AllToAllVWithBlocksBeyondTheBytesInFlight) {
  // Each rank's round-1 blocks (to rank + 1, from rank - 1) are larger than
  // alltoall_bytes_in_flight, so that round goes alone; the other rounds are small and
  // go together.
  ASSERT_GT(3000 * DataTypeBytes(DataType::kInt64), SmallThresholds().alltoall_bytes_in_flight);
  auto count = [&](int from, int to) -> size_t {
    return to == (from + 1) % size_ ? 3000 : static_cast<size_t>(from + to + 1);
  };
  RunRanks(size_, [&](int rank) { CheckAllToAllV(size_, comm(rank), rank, count); });
}

TEST_P(CollectivesTest, BarrierHoldsEveryRankUntilAllArrive) {
  std::atomic<int> arrived{0};
  RunRanks(size_, [&](int rank) {
    for (int round = 1; round <= 5; ++round) {
      arrived.fetch_add(1);
      ASSERT_TRUE(comm(rank).Barrier().ok());
      // Nobody leaves round k before everyone entered it.
      EXPECT_GE(arrived.load(), round * size_);
      ASSERT_TRUE(comm(rank).Barrier().ok());  // and nobody enters k+1 before all checked
    }
  });
}

TEST_P(CollectivesTest, AsyncOperationsOverlapAndKeepOrder) {
  constexpr int kOps = 6;
  constexpr size_t kCount = 3000;
  const std::vector<float> want = Expected<float>(size_, kCount, ReduceOp::kSum);
  RunRanks(size_, [&](int rank) {
    std::vector<std::vector<float>> buffers(kOps);
    std::vector<WorkHandle> handles;
    for (int op = 0; op < kOps; ++op) {
      buffers[op] = Input<float>(rank, kCount);
      handles.push_back(comm(rank).AllReduceAsync(buffers[op].data(), kCount, DataType::kFloat32,
                                                  ReduceOp::kSum));
    }
    // A synchronous call queues behind the asynchronous ones.
    int32_t root_value = rank == 0 ? 42 : 0;
    ASSERT_TRUE(comm(rank).Broadcast(&root_value, 1, DataType::kInt32, 0).ok());
    EXPECT_EQ(root_value, 42);
    for (int op = 0; op < kOps; ++op) {
      ASSERT_TRUE(handles[op].Wait().ok());
      EXPECT_TRUE(handles[op].done());
      EXPECT_EQ(buffers[op], want) << op;
    }
    WorkHandle barrier = comm(rank).BarrierAsync();
    EXPECT_TRUE(barrier.Wait().ok());
  });
}

TEST_P(CollectivesTest, InvalidArgumentsFailTheCallOnly) {
  std::vector<int32_t> data(4);
  EXPECT_EQ(comm(0).AllReduce(data.data(), 4, DataType::kInt32, ReduceOp::kSum, {true}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm(0).Broadcast(data.data(), 4, DataType::kInt32, size_).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<size_t> too_few(size_ - 1, 0);
  EXPECT_EQ(comm(0).AllToAllV(data.data(), too_few, data.data(), too_few, DataType::kInt32).code(),
            absl::StatusCode::kInvalidArgument);
  // All-gather in place must pass this rank's own block (rank 0's is block 0).
  std::vector<int32_t> gathered(4 * size_, 7);
  const absl::Status overlap =
      comm(0).AllGather(gathered.data() + 4, gathered.data(), 4, DataType::kInt32);
  EXPECT_EQ(overlap.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(overlap.message().find("in place, input must be output + 0 × 4 elements"),
            absl::string_view::npos)
      << overlap;
  EXPECT_EQ(comm(0).AllGatherAsync(gathered.data() + 2, gathered.data(), 4, DataType::kInt32)
                .Wait()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gathered, std::vector<int32_t>(4 * size_, 7)) << "nothing written";
  // Reduce-scatter in place must write this rank's own block of the input.
  const absl::Status scatter_overlap = comm(0).ReduceScatter(
      gathered.data(), gathered.data() + 4, 4, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(scatter_overlap.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(scatter_overlap.message().find("in place, output must be input + 0 × 4 elements"),
            absl::string_view::npos)
      << scatter_overlap;
  EXPECT_EQ(comm(0)
                .ReduceScatterAsync(gathered.data(), gathered.data() + 1, 4, DataType::kInt32,
                                    ReduceOp::kSum)
                .Wait()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gathered, std::vector<int32_t>(4 * size_, 7)) << "nothing written";
  // Still usable.
  RunRanks(size_, [&](int rank) { EXPECT_TRUE(comm(rank).Barrier().ok()); });
}

// Random floats (not small integers: rounding depends on the order of the additions),
// reproducible per rank.
template <typename T>
std::vector<T> RandomInput(int rank, size_t count) {
  std::mt19937_64 random(1000 + rank);
  std::uniform_real_distribution<double> uniform(-1e3, 1e3);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(uniform(random));
  return v;
}

// How far a sum of `ranks` values in [-1e3, 1e3] may round in T.
template <typename T>
double Tolerance(int ranks) {
  return ranks * 1e3 * 4 * (sizeof(T) == 4 ? 1e-7 : 1e-15);
}

// What the header promises of every all-reduce and reduce-scatter algorithm: whatever
// the order of additions, every rank ends with the same bits, close to the exact sum.
// Each case says which algorithm it must take at SmallThresholds(), and the
// communicator says which one ran.
template <typename T>
void CheckSameBitsEverywhere(CollectivesTest* test, int size, DataType type) {
  const bool power_of_two = (size & (size - 1)) == 0;
  struct Case {
    size_t count;
    const char* algorithm;
  };
  std::vector<Case> cases = {{7, "all_reduce/recursive_doubling"},
                             {20011, "all_reduce/ring"}};
  if (size > 2) {
    // 1023 elements of 4 bytes halve (power-of-two ranks) or take two rounds; 8 bytes
    // pass halving's 4 KiB and take two rounds.
    const bool halves = power_of_two && 1023 * sizeof(T) <= (4 << 10);
    cases.push_back({1023, halves ? "all_reduce/halving" : "all_reduce/direct"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(DataTypeName(type), " count ", c.count, " ", c.algorithm));
    std::vector<std::vector<T>> results(size);
    std::vector<std::map<std::string, uint64_t>> before(size), after(size);
    RunRanks(size, [&](int rank) {
      results[rank] = RandomInput<T>(rank, c.count);
      before[rank] = test->comm(rank).AlgorithmsRun();
      ASSERT_TRUE(
          test->comm(rank).AllReduce(results[rank].data(), c.count, type, ReduceOp::kSum).ok());
      after[rank] = test->comm(rank).AlgorithmsRun();
    });
    for (int rank = 0; rank < size; ++rank) {
      EXPECT_EQ(after[rank][c.algorithm], before[rank][c.algorithm] + 1) << "rank " << rank;
      ASSERT_EQ(std::memcmp(results[rank].data(), results[0].data(), c.count * sizeof(T)), 0)
          << "rank " << rank << " differs from rank 0";
    }
    std::vector<double> exact(c.count, 0.0);
    for (int rank = 0; rank < size; ++rank) {
      const std::vector<T> input = RandomInput<T>(rank, c.count);
      for (size_t i = 0; i < c.count; ++i) exact[i] += input[i];
    }
    for (size_t i = 0; i < c.count; ++i) {
      ASSERT_NEAR(results[0][i], exact[i], Tolerance<T>(size)) << "element " << i;
    }
  }
  // Reduce-scatter: each block is reduced on one rank only, so there are no copies to
  // disagree; the same call twice must give the same bits (a fixed order of additions).
  for (size_t count : {size_t{10}, size_t{3001}}) {
    const char* algorithm = size > 2 && count * size * sizeof(T) <= 1024
                                ? "reduce_scatter/direct"
                                : "reduce_scatter/ring";
    SCOPED_TRACE(absl::StrCat(DataTypeName(type), " reduce_scatter count ", count));
    std::vector<std::vector<T>> outputs(size), again(size);
    std::vector<std::map<std::string, uint64_t>> before(size), after(size);
    RunRanks(size, [&](int rank) {
      const std::vector<T> input = RandomInput<T>(rank, count * size);
      outputs[rank].assign(count, T{0});
      again[rank].assign(count, T{0});
      before[rank] = test->comm(rank).AlgorithmsRun();
      ASSERT_TRUE(test->comm(rank)
                      .ReduceScatter(input.data(), outputs[rank].data(), count, type,
                                     ReduceOp::kSum)
                      .ok());
      after[rank] = test->comm(rank).AlgorithmsRun();
      ASSERT_TRUE(test->comm(rank)
                      .ReduceScatter(input.data(), again[rank].data(), count, type,
                                     ReduceOp::kSum)
                      .ok());
    });
    for (int rank = 0; rank < size; ++rank) {
      EXPECT_EQ(after[rank][algorithm], before[rank][algorithm] + 1) << "rank " << rank;
      EXPECT_EQ(std::memcmp(outputs[rank].data(), again[rank].data(), count * sizeof(T)), 0)
          << "rank " << rank << ": the same reduce-scatter gave other bits";
      std::vector<double> exact(count, 0.0);
      for (int r = 0; r < size; ++r) {
        const std::vector<T> input = RandomInput<T>(r, count * size);
        for (size_t i = 0; i < count; ++i) exact[i] += input[rank * count + i];
      }
      for (size_t i = 0; i < count; ++i) {
        ASSERT_NEAR(outputs[rank][i], exact[i], Tolerance<T>(size))
            << "rank " << rank << " element " << i;
      }
    }
  }
}

TEST_P(CollectivesTest, EveryAlgorithmGivesEveryRankTheSameBitsOfRandomFloat32) {
  CheckSameBitsEverywhere<float>(this, size_, DataType::kFloat32);
}

TEST_P(CollectivesTest, EveryAlgorithmGivesEveryRankTheSameBitsOfRandomFloat64) {
  CheckSameBitsEverywhere<double>(this, size_, DataType::kFloat64);
}

TEST_P(CollectivesTest, TheCommunicatorNamesTheAlgorithmsThatRan) {
  RunRanks(size_, [&](int rank) {
    std::vector<float> small(4, 1.0f), big(20011, 1.0f), gathered(4 * size_);
    ASSERT_TRUE(comm(rank).AllReduce(small.data(), 4, DataType::kFloat32, ReduceOp::kSum).ok());
    ASSERT_TRUE(
        comm(rank).AllReduce(big.data(), big.size(), DataType::kFloat32, ReduceOp::kSum).ok());
    ASSERT_TRUE(comm(rank).AllGather(small.data(), gathered.data(), 4, DataType::kFloat32).ok());
    ASSERT_TRUE(comm(rank).Broadcast(big.data(), big.size(), DataType::kFloat32, 0).ok());
    ASSERT_TRUE(comm(rank).Barrier().ok());
    const std::map<std::string, uint64_t> ran = comm(rank).AlgorithmsRun();
    EXPECT_EQ(ran, (std::map<std::string, uint64_t>{{"all_reduce/recursive_doubling", 1},
                                                    {"all_reduce/ring", 1},
                                                    {"all_gather/direct", 1},
                                                    {"broadcast/chain", 1},
                                                    {"barrier/dissemination", 1}}))
        << "rank " << rank;
  });
}

INSTANTIATE_TEST_SUITE_P(TransportsAndSizes, CollectivesTest,
                         ::testing::Combine(::testing::Values("tcp", "rc"),
                                            ::testing::Values(2, 3, 4, 8)),
                         [](const auto& info) {
                           return absl::StrCat(std::get<0>(info.param), "_",
                                               std::get<1>(info.param), "ranks");
                         });

// A float32 sum over `ranks` TCP ranks at the default options, for each of `counts`.
void CheckFloatSumAtDefaults(int ranks, std::initializer_list<size_t> counts) {
  auto job = MakeJob("tcp", ranks, CommunicatorOptions());
  ASSERT_EQ(job->comms.size(), static_cast<size_t>(ranks));
  for (size_t count : counts) {
    const std::vector<float> want = Expected<float>(ranks, count, ReduceOp::kSum);
    RunRanks(ranks, [&](int rank) {
      std::vector<float> data = Input<float>(rank, count);
      ASSERT_TRUE(
          job->comms[rank]->AllReduce(data.data(), count, DataType::kFloat32, ReduceOp::kSum).ok());
      EXPECT_TRUE(data == want) << "count " << count << " rank " << rank;
    });
  }
}

// Default thresholds on a large buffer: the production path.
// Both sides of the 4 MiB direct_allreduce_bytes default: two everyone-to-everyone
// rounds whose chunks (1.2 MB) wait for the TCP transport's 1 MiB clear-to-send, and
// the ring.
TEST(CollectivesDefaultsTest, LargeAllReduceWithDefaultOptions) {
  CheckFloatSumAtDefaults(3, {900'001, (1 << 20) + 7});
}

// Both sides of the 1 MiB halving_allreduce_bytes default with four ranks: recursive
// halving and doubling on uneven chunks, and two rounds.
TEST(CollectivesDefaultsTest, PowerOfTwoRanksHalveUpTo1MiBThenTakeTwoRounds) {
  CheckFloatSumAtDefaults(4, {(1 << 18) - 3, 300'001});
}

// Both reduce-scatter and both all-gather algorithms, at their default thresholds
// (4 MiB of input, of output), with blocks above the TCP transport's 1 MiB
// clear-to-send size.
TEST(CollectivesDefaultsTest, ReduceScatterAndAllGatherEitherSideOfTheirThresholds) {
  constexpr int kRanks = 3;
  auto job = MakeJob("tcp", kRanks, CommunicatorOptions());
  ASSERT_EQ(job->comms.size(), 3u);
  for (size_t count : {size_t{300'000}, size_t{(1 << 19) + 3}}) {  // 3.6 MB, 6.3 MB of input
    const std::vector<float> full = Expected<float>(kRanks, count * kRanks, ReduceOp::kSum);
    RunRanks(kRanks, [&](int rank) {
      const std::vector<float> input = Input<float>(rank, count * kRanks);
      std::vector<float> output(count, -1.0f);
      ASSERT_TRUE(job->comms[rank]
                      ->ReduceScatter(input.data(), output.data(), count, DataType::kFloat32,
                                      ReduceOp::kSum)
                      .ok());
      EXPECT_TRUE(std::equal(output.begin(), output.end(), full.begin() + rank * count))
          << "count " << count << " rank " << rank;
      std::vector<float> gathered(count * kRanks, -1.0f);
      ASSERT_TRUE(job->comms[rank]
                      ->AllGather(output.data(), gathered.data(), count, DataType::kFloat32)
                      .ok());
      EXPECT_TRUE(gathered == full) << "count " << count << " rank " << rank;
    });
  }
}

TEST(CollectivesRcTest, ALargeAllReduceRegistersTheCallersBufferOnce) {
  constexpr int kRanks = 3;
  // Just over 4 MiB of float32 (the ring, above direct_allreduce_bytes): many segments,
  // all zero-copy.
  constexpr size_t kCount = (1 << 20) + 3;
  auto job = MakeJob("rc", kRanks, CommunicatorOptions());
  ASSERT_EQ(job->comms.size(), 3u);
  std::vector<std::vector<float>> data(kRanks, std::vector<float>(kCount, 1.0f));
  auto all_reduce = [&] {
    RunRanks(kRanks, [&](int rank) {
      ASSERT_TRUE(job->comms[rank]
                      ->AllReduce(data[rank].data(), kCount, DataType::kFloat32, ReduceOp::kSum)
                      .ok());
    });
  };
  all_reduce();  // scratch space is registered on first use
  const uint64_t before = job->rc->verbs[0]->RegisterMrCalls();
  all_reduce();
  EXPECT_EQ(job->rc->verbs[0]->RegisterMrCalls() - before, 1u);
  EXPECT_EQ(data[0][kCount - 1], 9.0f);
}

TEST(CollectivesFailureTest, APeerFailureAbortsTheCommunicator) {
  auto job = MakeJob("tcp", 3);
  ASSERT_EQ(job->comms.size(), 3u);
  job->comms[2].reset();  // rank 2 dies
  RunRanks(2, [&](int rank) {
    std::vector<float> data(100, 1.0f);
    absl::Status status =
        job->comms[rank]->AllReduce(data.data(), 100, DataType::kFloat32, ReduceOp::kSum);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("all_reduce of 100 float32 (sum) on rank"),
              absl::string_view::npos)
        << status;
    absl::Status later = job->comms[rank]->Barrier();
    EXPECT_EQ(later.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(later.message().find("communicator aborted after an earlier failure"),
              absl::string_view::npos)
        << later;
  });
}

TEST(CollectivesSingleRankTest, EveryOperationIsLocal) {
  auto job = MakeJob("tcp", 1);
  ASSERT_EQ(job->comms.size(), 1u);
  Communicator& comm = *job->comms[0];
  std::vector<float> data = {1, 2, 3};
  ASSERT_TRUE(comm.AllReduce(data.data(), 3, DataType::kFloat32, ReduceOp::kSum).ok());
  EXPECT_EQ(data, (std::vector<float>{1, 2, 3}));
  std::vector<float> out(3);
  ASSERT_TRUE(
      comm.ReduceScatter(data.data(), out.data(), 3, DataType::kFloat32, ReduceOp::kSum).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(comm.AllGather(data.data(), out.data(), 3, DataType::kFloat32).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(comm.AllToAll(data.data(), out.data(), 3, DataType::kFloat32).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(comm.Barrier().ok());
}

}  // namespace
}  // namespace weft::datapath
