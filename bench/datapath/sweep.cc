#include "bench/datapath/sweep.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::bench {
namespace {

absl::Status CheckAllReduce(const SweepConfig& config, CollectiveLibrary& ops,
                            std::vector<float>& data) {
  std::fill(data.begin(), data.end(), static_cast<float>(config.rank + 1));
  RETURN_IF_ERROR(ops.AllReduceSum(data.data(), data.size()));
  const float want = config.ranks * (config.ranks + 1) / 2.0f;
  for (size_t i : {size_t{0}, data.size() / 2, data.size() - 1}) {
    if (data[i] != want) {
      return absl::InternalError(absl::StrCat("all-reduce of ", data.size(), " floats: element ", i,
                                              " is ", data[i], ", want ", want));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAllToAll(const SweepConfig& config, CollectiveLibrary& ops,
                           std::vector<float>& input, std::vector<float>& output, size_t count) {
  for (int to = 0; to < config.ranks; ++to) {
    std::fill(input.begin() + to * count, input.begin() + (to + 1) * count,
              static_cast<float>(config.rank * 1000 + to));
  }
  RETURN_IF_ERROR(ops.AllToAll(input.data(), output.data(), count));
  for (int from = 0; from < config.ranks; ++from) {
    for (size_t i : {size_t{0}, count - 1}) {
      const float got = output[from * count + i];
      const float want = static_cast<float>(from * 1000 + config.rank);
      if (got != want) {
        return absl::InternalError(
            absl::StrCat("all-to-all: block from rank ", from, " holds ", got, ", want ", want));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAllGather(const SweepConfig& config, CollectiveLibrary& ops,
                            std::vector<float>& input, std::vector<float>& output, size_t count) {
  std::fill(input.begin(), input.end(), static_cast<float>(config.rank * 1000 + 7));
  std::fill(output.begin(), output.end(), -1.0f);
  RETURN_IF_ERROR(ops.AllGather(input.data(), output.data(), count));
  for (int from = 0; from < config.ranks; ++from) {
    for (size_t i : {size_t{0}, count / 2, count - 1}) {
      const float got = output[from * count + i];
      const float want = static_cast<float>(from * 1000 + 7);
      if (got != want) {
        return absl::InternalError(absl::StrCat("all-gather: block of rank ", from,
                                                " element ", i, " holds ", got, ", want ", want));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckReduceScatter(const SweepConfig& config, CollectiveLibrary& ops,
                                std::vector<float>& input, std::vector<float>& output,
                                size_t count) {
  for (int to = 0; to < config.ranks; ++to) {
    std::fill(input.begin() + to * count, input.begin() + (to + 1) * count,
              static_cast<float>(config.rank * 1000 + to));
  }
  std::fill(output.begin(), output.end(), -1.0f);
  RETURN_IF_ERROR(ops.ReduceScatterSum(input.data(), output.data(), count));
  // Every rank's block `rank`, summed: 1000 × (0 + 1 + ... + n-1) + n × rank.
  const float want =
      1000.0f * config.ranks * (config.ranks - 1) / 2 + static_cast<float>(config.ranks) * config.rank;
  for (size_t i : {size_t{0}, count / 2, count - 1}) {
    if (output[i] != want) {
      return absl::InternalError(absl::StrCat("reduce-scatter: element ", i, " of rank ",
                                              config.rank, "'s block holds ", output[i],
                                              ", want ", want));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Measurement>> RunSweep(const SweepConfig& config,
                                                  const std::string& library,
                                                  CollectiveLibrary& ops) {
  std::vector<Measurement> out;
  CollectiveHooks hooks;
  hooks.max_over_ranks = [&](double v) { return ops.MaxOverRanks(v); };
  hooks.sum_over_ranks = [&](double v) { return ops.SumOverRanks(v); };
  // Times run_once at `bytes`, or says which collective and size failed.
  auto time = [&](Collective collective, size_t bytes,
                  std::function<absl::Status()> run_once) -> absl::StatusOr<Measurement> {
    hooks.run_once = std::move(run_once);
    absl::StatusOr<Timing> timing = TimeCollective(hooks, config.policy);
    if (!timing.ok()) {
      return absl::Status(timing.status().code(),
                          absl::StrCat(library, " ", CollectiveName(collective), " of ", bytes,
                                       " bytes: ", timing.status().message()));
    }
    return Measurement{library,          collective,         config.ranks, bytes,
                       timing->time_us, timing->iterations, timing->cpu_us};
  };
  if (config.all_reduce) {
    for (size_t bytes : config.sizes) {
      const size_t count = std::max<size_t>(bytes / sizeof(float), 1);
      std::vector<float> data(count, 1.0f);
      ASSIGN_OR_RETURN(Measurement m, time(Collective::kAllReduce, count * sizeof(float), [&] {
                         return ops.AllReduceSum(data.data(), count);
                       }));
      RETURN_IF_ERROR(CheckAllReduce(config, ops, data));
      out.push_back(m);
    }
  }
  // Collectives over whole float32 blocks of `count` per rank: the input holds
  // in_blocks of them, the output out_blocks.
  using BlockOp = std::function<absl::Status(float* input, float* output, size_t count)>;
  using BlockCheck = absl::Status (*)(const SweepConfig&, CollectiveLibrary&,
                                      std::vector<float>&, std::vector<float>&, size_t);
  auto sweep_blocks = [&](Collective collective, int in_blocks, int out_blocks, BlockOp run,
                          BlockCheck check) -> absl::Status {
    for (size_t requested : config.sizes) {
      const size_t bytes = WholeFloatsPerRankBytes(requested, config.ranks);
      const size_t count = bytes / sizeof(float) / config.ranks;
      std::vector<float> input(count * in_blocks, 1.0f), output(count * out_blocks);
      ASSIGN_OR_RETURN(Measurement m, time(collective, bytes, [&] {
                         return run(input.data(), output.data(), count);
                       }));
      RETURN_IF_ERROR(check(config, ops, input, output, count));
      out.push_back(m);
    }
    return absl::OkStatus();
  };
  const int n = config.ranks;
  if (config.all_to_all) {
    RETURN_IF_ERROR(sweep_blocks(
        Collective::kAllToAll, n, n,
        [&](float* in, float* o, size_t count) { return ops.AllToAll(in, o, count); },
        CheckAllToAll));
  }
  if (config.all_gather) {
    RETURN_IF_ERROR(sweep_blocks(
        Collective::kAllGather, 1, n,
        [&](float* in, float* o, size_t count) { return ops.AllGather(in, o, count); },
        CheckAllGather));
  }
  if (config.reduce_scatter) {
    RETURN_IF_ERROR(sweep_blocks(
        Collective::kReduceScatter, n, 1,
        [&](float* in, float* o, size_t count) { return ops.ReduceScatterSum(in, o, count); },
        CheckReduceScatter));
  }
  return out;
}

}  // namespace weft::bench
