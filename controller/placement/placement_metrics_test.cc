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

}  // namespace
}  // namespace weft::controller
