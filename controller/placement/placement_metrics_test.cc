// PlacementMetrics: every result series exists from the start, counts, gauges.
#include "controller/placement/placement_metrics.h"

#include "common/testing/metrics.h"
#include "gtest/gtest.h"

namespace weft::controller {
namespace {

TEST(PlacementMetricsTest, ResultSeriesStartAtZeroAndCount) {
  prometheus::Registry registry;
  PlacementMetrics metrics(registry);
  for (const char* result : {"placed", "existing", "no_capacity", "infeasible", "conflict",
                             "invalid", "error"}) {
    EXPECT_EQ(MetricValue(registry, "weft_controller_placements_total", {{"result", result}}),
              0)
        << result;
  }
  metrics.PlacementDone(PlacementResult::kPlaced);
  metrics.PlacementDone(PlacementResult::kPlaced);
  metrics.PlacementDone(PlacementResult::kNoCapacity);
  EXPECT_EQ(MetricValue(registry, "weft_controller_placements_total", {{"result", "placed"}}),
            2);
  EXPECT_EQ(
      MetricValue(registry, "weft_controller_placements_total", {{"result", "no_capacity"}}),
      1);
}

TEST(PlacementMetricsTest, ReservationGauges) {
  prometheus::Registry registry;
  PlacementMetrics metrics(registry);
  EXPECT_EQ(MetricValue(registry, "weft_controller_reservations"), 0);
  metrics.SetReservations(2, 7);
  EXPECT_EQ(MetricValue(registry, "weft_controller_reservations"), 2);
  EXPECT_EQ(MetricValue(registry, "weft_controller_reserved_nodes"), 7);
}

TEST(PlacementMetricsTest, JobSeriesAreSetPerJobAndRemovedWhenNotLive) {
  prometheus::Registry registry;
  PlacementMetrics metrics(registry);
  weft::v1::JobProgress progress;
  progress.set_iteration_s(1.5);
  progress.set_iterations_done(3);
  metrics.JobReported("a", progress, 4);
  progress.set_iteration_s(2.5);
  metrics.JobReported("b", progress, 8);
  EXPECT_EQ(MetricValue(registry, "weft_job_iteration_seconds", {{"job_id", "a"}}), 1.5);
  EXPECT_EQ(MetricValue(registry, "weft_job_iteration_seconds", {{"job_id", "b"}}), 2.5);
  EXPECT_EQ(MetricValue(registry, "weft_job_nodes", {{"job_id", "b"}}), 8);

  metrics.RetainJobs({"b"});
  EXPECT_FALSE(MetricValue(registry, "weft_job_iteration_seconds", {{"job_id", "a"}}));
  EXPECT_FALSE(MetricValue(registry, "weft_job_iterations", {{"job_id", "a"}}));
  EXPECT_EQ(MetricValue(registry, "weft_job_iterations", {{"job_id", "b"}}), 3);
  // A job that reports again after leaving gets its series back.
  metrics.JobReported("a", progress, 4);
  EXPECT_EQ(MetricValue(registry, "weft_job_iteration_seconds", {{"job_id", "a"}}), 2.5);
}

}  // namespace
}  // namespace weft::controller
