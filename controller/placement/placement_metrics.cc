#include "controller/placement/placement_metrics.h"

#include <string>

namespace weft::controller {
namespace {

constexpr PlacementResult kAllResults[] = {
    PlacementResult::kPlaced,   PlacementResult::kExisting, PlacementResult::kNoCapacity,
    PlacementResult::kInfeasible, PlacementResult::kConflict, PlacementResult::kInvalid,
    PlacementResult::kError};

}  // namespace

absl::string_view PlacementResultLabel(PlacementResult result) {
  switch (result) {
    case PlacementResult::kPlaced:
      return "placed";
    case PlacementResult::kExisting:
      return "existing";
    case PlacementResult::kNoCapacity:
      return "no_capacity";
    case PlacementResult::kInfeasible:
      return "infeasible";
    case PlacementResult::kConflict:
      return "conflict";
    case PlacementResult::kInvalid:
      return "invalid";
    case PlacementResult::kError:
      return "error";
  }
  return "error";
}

PlacementMetrics::PlacementMetrics(prometheus::Registry& registry)
    : placements_(prometheus::BuildCounter()
                      .Name("weft_controller_placements_total")
                      .Help("Place calls, by result (placed, existing, no_capacity, "
                            "infeasible, conflict, invalid, error).")
                      .Register(registry)),
      reservations_(prometheus::BuildGauge()
                        .Name("weft_controller_reservations")
                        .Help("Live placement reservations.")
                        .Register(registry)
                        .Add({})),
      reserved_nodes_(prometheus::BuildGauge()
                          .Name("weft_controller_reserved_nodes")
                          .Help("Nodes held by live placement reservations.")
                          .Register(registry)
                          .Add({})) {
  for (PlacementResult result : kAllResults) {
    placements_.Add({{"result", std::string(PlacementResultLabel(result))}});
  }
}

void PlacementMetrics::PlacementDone(PlacementResult result) {
  placements_.Add({{"result", std::string(PlacementResultLabel(result))}}).Increment();
}

void PlacementMetrics::SetReservations(int64_t reservations, int64_t reserved_nodes) {
  reservations_.Set(static_cast<double>(reservations));
  reserved_nodes_.Set(static_cast<double>(reserved_nodes));
}

}  // namespace weft::controller
