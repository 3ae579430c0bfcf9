#include "tuning/objective.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cc_params.h"

namespace weft::tuning {
namespace {

using ::testing::HasSubstr;

ScenarioEvaluation With(ScenarioKind kind, ScenarioMetrics mean) {
  ScenarioEvaluation e;
  e.kind = kind;
  e.mean = mean;
  return e;
}

TEST(ScoreTest, WeighsEachScenariosMetricsAndPenalisesLosses) {
  const ObjectiveWeights w;
  const ScenarioMetrics base{.busbw_gbytes_per_s = 20, .completion_us = 1000, .p99_fct_us = 1000,
                             .pause_share = 0.4, .mean_queue_bytes = 1e6, .jain_fairness = 1};
  const std::vector<ScenarioEvaluation> baseline = {With(ScenarioKind::kAllReduce, base)};
  EXPECT_DOUBLE_EQ(Score(baseline, baseline, w), 0);
  ScenarioMetrics faster = base;
  faster.busbw_gbytes_per_s = 22;
  EXPECT_NEAR(Score({With(ScenarioKind::kAllReduce, faster)}, baseline, w), w.busbw * std::log(1.1),
              1e-12);
  ScenarioMetrics slower = base;
  slower.busbw_gbytes_per_s = 20 / 1.1;
  EXPECT_NEAR(Score({With(ScenarioKind::kAllReduce, slower)}, baseline, w),
              -w.regression_penalty * w.busbw * std::log(1.1), 1e-12);
  ScenarioMetrics fewer_pauses = base;
  fewer_pauses.pause_share = 0.1;
  EXPECT_NEAR(Score({With(ScenarioKind::kAllReduce, fewer_pauses)}, baseline, w),
              w.pause_share * 0.3, 1e-12);
  // Completion is the all-to-all's metric, not the all-reduce's.
  ScenarioMetrics quicker = base;
  quicker.completion_us = 500;
  EXPECT_DOUBLE_EQ(Score({With(ScenarioKind::kAllReduce, quicker)}, baseline, w), 0);
  EXPECT_NEAR(Score({With(ScenarioKind::kAllToAll, quicker)}, {With(ScenarioKind::kAllToAll, base)}, w),
              w.completion * std::log(2), 1e-12);
}

TEST(ScoreTest, ScenarioWeightsMakeAWeightedMean) {
  const ObjectiveWeights w;
  const ScenarioMetrics base{.busbw_gbytes_per_s = 20, .completion_us = 1000};
  ScenarioMetrics better = base;
  better.completion_us = 500;  // the all-to-all gains log 2; the all-reduce nothing
  std::vector<ScenarioEvaluation> baseline = {With(ScenarioKind::kAllReduce, base),
                                              With(ScenarioKind::kAllToAll, base)};
  std::vector<ScenarioEvaluation> candidate = {With(ScenarioKind::kAllReduce, better),
                                               With(ScenarioKind::kAllToAll, better)};
  EXPECT_NEAR(Score(candidate, baseline, w), w.completion * std::log(2) / 2, 1e-12);
  candidate[0].weight = 0.5;
  candidate[1].weight = 1.5;
  EXPECT_NEAR(Score(candidate, baseline, w), w.completion * std::log(2) * 1.5 / 2, 1e-12);
}

TEST(EvaluatorTest, RefusesANegativeScenarioWeight) {
  EvaluatorOptions options;
  options.scenarios = {{"incast 4→1", ScenarioKind::kIncast, 4, -1}};
  options.seeds = {1};
  EXPECT_THAT(std::string(Evaluator::Create(options, sim::FirmwareDefaultCcParams()).status().message()),
              HasSubstr("weight -1"));
}

TEST(EvaluatorTest, CountsEvaluationsAndRefusesNoSeeds) {
  EvaluatorOptions options;
  options.scenarios = {{"incast 4→1", ScenarioKind::kIncast, 4}};
  options.seeds = {1};
  Evaluator evaluator = Evaluator::Create(options, sim::FirmwareDefaultCcParams()).value();
  EXPECT_EQ(evaluator.evaluations(), 0);  // the baseline is not counted
  const ProfileEvaluation same = evaluator.Evaluate(sim::FirmwareDefaultCcParams()).value();
  EXPECT_DOUBLE_EQ(same.score, 0);
  EXPECT_EQ(evaluator.evaluations(), 1);
  options.seeds.clear();
  EXPECT_THAT(std::string(Evaluator::Create(options, sim::FirmwareDefaultCcParams()).status().message()),
              HasSubstr("seeds is empty"));
}

// Why the firmware defaults pause an 8→1 incast: rp_byte_reset = 32767 bytes fires a
// rate-increase event every 0.65 µs of a 400 Gb/s flow, so fast recovery and hyper increase
// undo each cut within microseconds and the queue climbs to the 3 MB PFC threshold. With
// the byte counter off, increases wait for the timer (300 µs) and the cuts hold the queue
// under Xoff; the link stays full, so completion does not move.
TEST(EvaluatorTest, ByteCounterOffStopsTheIncastsPauses) {
  const Scenario incast{"incast 8→1", ScenarioKind::kIncast, 8};
  const TuningFabric fabric;
  weft::v1::DcqcnParams byte_counter_off = sim::FirmwareDefaultCcParams();
  byte_counter_off.set_rp_byte_reset(0);
  for (uint64_t seed : {1, 2}) {
    const ScenarioMetrics defaults = RunScenario(incast, fabric, sim::FirmwareDefaultCcParams(), seed).value();
    const ScenarioMetrics off = RunScenario(incast, fabric, byte_counter_off, seed).value();
    EXPECT_GT(defaults.pause_share, 0.5) << seed;
    EXPECT_LT(off.pause_share, 0.5 * defaults.pause_share) << seed;
    EXPECT_LT(off.completion_us, 1.02 * defaults.completion_us) << seed;
    EXPECT_LT(off.mean_queue_bytes, defaults.mean_queue_bytes) << seed;
  }
}

}  // namespace
}  // namespace weft::tuning
