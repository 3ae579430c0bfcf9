#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "sim/cc_params.h"
#include "tuning/objective.h"

namespace weft::tuning {
namespace {

int Main() {
  EvaluatorOptions options;
  options.seeds = {101, 102, 103, 104, 105};
  auto t0 = std::chrono::steady_clock::now();
  Evaluator ev = Evaluator::Create(options, sim::FirmwareDefaultCcParams()).value();
  auto t1 = std::chrono::steady_clock::now();
  std::printf("baseline eval %.2f s\n", std::chrono::duration<double>(t1 - t0).count());
  for (const sim::CcPreset& preset : sim::CcPresets()) {
    const ProfileEvaluation e = ev.Evaluate(preset.cc).value();
    std::printf("%s score %.4f\n", preset.name.c_str(), e.score);
    for (const ScenarioEvaluation& s : e.scenarios) {
      std::printf("  %-26s busbw %.2f ± %.2f  compl %.0f ± %.0f  p99 %.0f  pause %.3f  queue %.0f KB  jain %.4f\n",
                  s.scenario.c_str(), s.mean.busbw_gbytes_per_s, s.stddev.busbw_gbytes_per_s,
                  s.mean.completion_us, s.stddev.completion_us, s.mean.p99_fct_us, s.mean.pause_share,
                  s.mean.mean_queue_bytes / 1e3, s.mean.jain_fairness);
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::tuning

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return weft::tuning::Main();
}
