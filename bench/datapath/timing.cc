#include "bench/datapath/timing.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace weft::bench {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

absl::StatusOr<Timing> TimeCollective(const CollectiveHooks& hooks, const TimingPolicy& policy) {
  for (int i = 0; i < policy.warmup_iterations; ++i) RETURN_IF_ERROR(hooks.run_once());
  ASSIGN_OR_RETURN(double ignored, hooks.max_over_ranks(0));
  (void)ignored;
  double start = NowSeconds();
  RETURN_IF_ERROR(hooks.run_once());
  ASSIGN_OR_RETURN(double probe, hooks.max_over_ranks(NowSeconds() - start));
  const int runs =
      static_cast<int>(std::clamp(std::floor(policy.budget_seconds / std::max(probe, 1e-9)),
                                  static_cast<double>(std::max(policy.min_iterations, 1)),
                                  static_cast<double>(std::max(policy.max_iterations, 1))));
  const int batches = std::clamp(runs, 1, std::max(policy.batches, 1));
  const int per_batch = runs / batches;
  double best = 1e300;
  double best_cpu = 0;
  for (int b = 0; b < batches; ++b) {
    ASSIGN_OR_RETURN(ignored, hooks.max_over_ranks(0));  // line up
    const double cpu_start = hooks.cpu_seconds();
    start = NowSeconds();
    for (int i = 0; i < per_batch; ++i) RETURN_IF_ERROR(hooks.run_once());
    const double mean = (NowSeconds() - start) / per_batch;
    const double cpu = (hooks.cpu_seconds() - cpu_start) / per_batch;
    ASSIGN_OR_RETURN(double slowest, hooks.max_over_ranks(mean));
    double all_cpu = 0;
    if (hooks.sum_over_ranks) {
      ASSIGN_OR_RETURN(all_cpu, hooks.sum_over_ranks(cpu));
    }
    if (slowest < best) {
      best = slowest;
      best_cpu = all_cpu;
    }
  }
  return Timing{best * 1e6, batches * per_batch, best_cpu * 1e6};
}

std::vector<size_t> SweepSizes(size_t max_bytes) {
  std::vector<size_t> sizes;
  for (size_t s : {size_t{8}, size_t{64}, size_t{512}, size_t{4} << 10, size_t{32} << 10,
                   size_t{64} << 10, size_t{256} << 10}) {
    if (s <= max_bytes) sizes.push_back(s);
  }
  for (size_t s = size_t{1} << 20; s <= max_bytes; s *= 4) sizes.push_back(s);
  return sizes;
}

size_t WholeFloatsPerRankBytes(size_t bytes, int ranks) {
  const size_t unit = 4 * static_cast<size_t>(ranks);
  return (bytes + unit - 1) / unit * unit;
}

std::string SerializeMeasurement(const Measurement& m) {
  return absl::StrFormat("%s %s %d %d %.3f %d %.3f\n", m.library, CollectiveName(m.collective),
                         m.ranks, m.bytes, m.time_us, m.iterations, m.cpu_us);
}

absl::StatusOr<std::vector<Measurement>> ParseMeasurements(const std::string& text) {
  std::vector<Measurement> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;  // a note, not a measurement
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    Measurement m;
    bool ok = f.size() == 7;
    if (ok) {
      m.library = std::string(f[0]);
      ok = ParseCollective(f[1], &m.collective);
      ok = ok && absl::SimpleAtoi(f[2], &m.ranks) && absl::SimpleAtoi(f[3], &m.bytes) &&
           absl::SimpleAtod(f[4], &m.time_us) && absl::SimpleAtoi(f[5], &m.iterations) &&
           absl::SimpleAtod(f[6], &m.cpu_us);
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("bad measurement line '", line, "'"));
    out.push_back(m);
  }
  return out;
}

std::string SerializePasses(const std::vector<std::vector<Measurement>>& passes) {
  std::string text;
  for (size_t p = 0; p < passes.size(); ++p) {
    absl::StrAppend(&text, "# pass ", p + 1, "\n");
    for (const Measurement& m : passes[p]) text += SerializeMeasurement(m);
  }
  return text;
}

absl::StatusOr<std::vector<std::vector<Measurement>>> ParsePasses(const std::string& text) {
  std::vector<std::vector<Measurement>> passes;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StartsWith(line, "# pass ")) {
      passes.emplace_back();
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (passes.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": a measurement before the first '# pass' line"));
    }
    absl::StatusOr<std::vector<Measurement>> parsed = ParseMeasurements(std::string(line));
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", parsed.status().message()));
    }
    passes.back().insert(passes.back().end(), parsed->begin(), parsed->end());
  }
  return passes;
}

}  // namespace weft::bench
