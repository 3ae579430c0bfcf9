// PlacementMetrics: the Prometheus families of the controller's placement service,
// registered on the controller's prometheus::Registry next to ControllerMetrics.
// PlacementManager records here; names are part of the operator interface:
//
//   weft_controller_placements_total{result}   counter, one per Place call:
//     placed       a new reservation was made
//     existing     the job already held a reservation for the same request; it was
//                  returned unchanged
//     no_capacity  RESOURCE_EXHAUSTED: not enough free, eligible nodes now
//     infeasible   FAILED_PRECONDITION: constraints no state of the cluster could meet
//     conflict     FAILED_PRECONDITION: the job holds a reservation for another request
//     invalid      INVALID_ARGUMENT: a bad request (sizes, unknown QoS class, ...)
//     error        anything else
//   weft_controller_reservations               gauge, live reservations
//   weft_controller_reserved_nodes             gauge, nodes held by live reservations
//
// Every result label exists from the start (at 0), so rate() works on the first one.
// Thread-safe: prometheus-cpp metrics are atomic.
#ifndef WEFT_CONTROLLER_PLACEMENT_PLACEMENT_METRICS_H_
#define WEFT_CONTROLLER_PLACEMENT_PLACEMENT_METRICS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace weft::controller {

enum class PlacementResult { kPlaced, kExisting, kNoCapacity, kInfeasible, kConflict,
                             kInvalid, kError };

// "placed", "existing", ...: the label value of `result`.
absl::string_view PlacementResultLabel(PlacementResult result);

class PlacementMetrics {
 public:
  // Registers the families on `registry`, which must outlive this object.
  explicit PlacementMetrics(prometheus::Registry& registry);

  PlacementMetrics(const PlacementMetrics&) = delete;
  PlacementMetrics& operator=(const PlacementMetrics&) = delete;

  void PlacementDone(PlacementResult result);
  void SetReservations(int64_t reservations, int64_t reserved_nodes);

 private:
  prometheus::Family<prometheus::Counter>& placements_;
  prometheus::Gauge& reservations_;
  prometheus::Gauge& reserved_nodes_;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_PLACEMENT_METRICS_H_
