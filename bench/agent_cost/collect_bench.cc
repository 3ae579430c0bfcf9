// Micro-benchmarks of one agent collection's parts on the 8-NIC fixture tree: the
// Linux backend's ReadCounters (sysfs files + ethtool ioctl), the counter math, and
// building the TelemetryBatch. Run: bazel run -c opt //bench/agent_cost:collect_bench
#include <cstdlib>
#include <filesystem>
#include <string>

#include "agent/counter_math.h"
#include "agent/linux/ethtool_stats.h"
#include "agent/linux/linux_backend.h"
#include "benchmark/benchmark.h"
#include "common/clock.h"
#include "tests/fixture_tree.h"

namespace weft::agent {
namespace {

std::string FixtureRoot() {
  static const std::string root = [] {
    const std::string dir = std::filesystem::temp_directory_path() / "weft_collect_bench";
    std::filesystem::remove_all(dir);
    if (!weft::testing::MaterializeFixture("tests/fixtures/mlx5_8nic_8gpu.tree", dir).ok()) {
      std::abort();
    }
    return dir;
  }();
  return root;
}

void BM_LinuxReadCounters(benchmark::State& state) {
  RealClock clock;
  IoctlEthtoolReader ethtool;
  LinuxBackendOptions options;
  options.root = FixtureRoot();
  LinuxNicBackend backend(options, &ethtool, &clock);
  if (!backend.Discover().ok()) std::abort();
  for (auto _ : state) {
    auto readings = backend.ReadCounters();
    benchmark::DoNotOptimize(readings);
  }
}
BENCHMARK(BM_LinuxReadCounters);

void BM_ComputeNicUpdates(benchmark::State& state) {
  RealClock clock;
  IoctlEthtoolReader ethtool;
  LinuxBackendOptions options;
  options.root = FixtureRoot();
  LinuxNicBackend backend(options, &ethtool, &clock);
  auto first = backend.ReadCounters();
  auto second = backend.ReadCounters();
  for (auto _ : state) {
    for (size_t i = 0; i < first->size(); ++i) {
      NicUpdate update = ComputeNicUpdate(&(*first)[i], (*second)[i]);
      benchmark::DoNotOptimize(update);
    }
  }
}
BENCHMARK(BM_ComputeNicUpdates);

}  // namespace
}  // namespace weft::agent

BENCHMARK_MAIN();
