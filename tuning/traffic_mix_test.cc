#include "tuning/traffic_mix.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft::tuning {
namespace {

weft::v1::PlacementResponse Ranks(int n) {
  weft::v1::PlacementResponse reservation;
  for (int i = 0; i < n; ++i) reservation.add_ranks()->set_rank(i);
  return reservation;
}

TEST(TrafficMixTest, DeclaredBytesPerIterationByKind) {
  weft::v1::PlacementRequest moe;
  moe.mutable_parallelism()->set_expert(8);
  moe.set_gradient_bytes(100);
  moe.set_alltoall_bytes(600);
  moe.set_activation_bytes(50);
  const JobTraffic job = DeclaredTraffic(moe, Ranks(16));
  EXPECT_EQ(job.bytes[static_cast<int>(TrafficKind::kAllReduce)], 2 * 100 * 16);
  EXPECT_EQ(job.bytes[static_cast<int>(TrafficKind::kAllToAll)], 600 * 16);
  EXPECT_EQ(job.bytes[static_cast<int>(TrafficKind::kPipeline)], 50 * 16);
  EXPECT_EQ(job.bytes[static_cast<int>(TrafficKind::kStorage)], 0);

  const TrafficMix mix = MixOf({job});
  EXPECT_DOUBLE_EQ(mix.bytes_per_iteration, (200 + 600 + 50) * 16);
  EXPECT_DOUBLE_EQ(mix.of(TrafficKind::kAllToAll), 600.0 / 850);
  EXPECT_EQ(FormatMix(mix), "all_to_all 71%, all_reduce 24%, pipeline 6%");
}

TEST(TrafficMixTest, StorageClassAndUndeclaredJobs) {
  weft::v1::PlacementRequest storage;
  storage.set_qos_class("storage");
  storage.set_gradient_bytes(10);
  EXPECT_EQ(DeclaredTraffic(storage, Ranks(2)).bytes[static_cast<int>(TrafficKind::kStorage)],
            40);

  // No bytes declared: one byte per rank on the pattern, so the job weighs by size.
  weft::v1::PlacementRequest a2a;
  a2a.set_pattern(weft::v1::TRAFFIC_PATTERN_ALL_TO_ALL);
  weft::v1::PlacementRequest ring;  // unspecified: all-reduce
  const TrafficMix mix = MixOf({DeclaredTraffic(a2a, Ranks(24)), DeclaredTraffic(ring, Ranks(8))});
  EXPECT_DOUBLE_EQ(mix.of(TrafficKind::kAllToAll), 0.75);
  EXPECT_DOUBLE_EQ(mix.of(TrafficKind::kAllReduce), 0.25);

  EXPECT_TRUE(MixOf({}).empty());
  EXPECT_EQ(FormatMix(MixOf({})), "no declared traffic");
}

TrafficMix Mix(double all_reduce, double all_to_all, double storage = 0) {
  JobTraffic job;
  job.bytes[static_cast<int>(TrafficKind::kAllReduce)] = all_reduce;
  job.bytes[static_cast<int>(TrafficKind::kAllToAll)] = all_to_all;
  job.bytes[static_cast<int>(TrafficKind::kStorage)] = storage;
  return MixOf({job});
}

TEST(TrafficMixTest, DivergenceIsTheShareOfBytesThatChangedKind) {
  EXPECT_DOUBLE_EQ(Divergence(Mix(1, 0), Mix(1, 0)), 0);
  EXPECT_DOUBLE_EQ(Divergence(Mix(1, 0), Mix(0, 1)), 1);
  EXPECT_NEAR(Divergence(Mix(0.8, 0.2), Mix(0.5, 0.5)), 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(Divergence(Mix(0.8, 0.2), Mix(0.5, 0.5)),
                   Divergence(Mix(0.5, 0.5), Mix(0.8, 0.2)));
  // A kind absent from one side stays finite (KL would be infinite).
  EXPECT_NEAR(Divergence(Mix(1, 0), Mix(0.9, 0, 0.1)), 0.1, 1e-12);
  // Empty: nothing known.
  EXPECT_EQ(Divergence(TrafficMix{}, TrafficMix{}), 0);
  EXPECT_EQ(Divergence(TrafficMix{}, Mix(1, 0)), 1);
}

double WeightOf(const std::vector<Scenario>& scenarios, ScenarioKind kind) {
  for (const Scenario& s : scenarios) {
    if (s.kind == kind) return s.weight;
  }
  return -1;
}

TEST(TrafficMixTest, WeightsFollowTheMix) {
  const std::vector<Scenario> equal = WeighScenarios(TrafficMix{}, StandardScenarios());
  for (const Scenario& s : equal) EXPECT_EQ(s.weight, 1) << s.name;

  const std::vector<Scenario> moe = WeighScenarios(Mix(0.1, 0.9), StandardScenarios());
  double sum = 0;
  for (const Scenario& s : moe) sum += s.weight;
  EXPECT_NEAR(sum, moe.size(), 1e-9);  // mean 1: scores stay on the same scale
  const double a2a = WeightOf(moe, ScenarioKind::kAllToAll);
  EXPECT_GT(a2a, 2 * WeightOf(moe, ScenarioKind::kAllReduce));
  EXPECT_GT(WeightOf(moe, ScenarioKind::kAllReduce), WeightOf(moe, ScenarioKind::kMixed));
  // Every scenario keeps a floor: incast and storage still count.
  EXPECT_GT(WeightOf(moe, ScenarioKind::kIncast), 0);
  EXPECT_GT(WeightOf(moe, ScenarioKind::kMixed), 0);
  // 0.1 + 0.9 against 0.1 + 0.1 (all-reduce), and 0.1 for the three others.
  EXPECT_NEAR(a2a, 1.0 * 5 / 1.5, 1e-9);

  const std::vector<Scenario> ring = WeighScenarios(Mix(1, 0), StandardScenarios());
  EXPECT_GT(WeightOf(ring, ScenarioKind::kAllReduce), WeightOf(ring, ScenarioKind::kAllToAll));
}

}  // namespace
}  // namespace weft::tuning
