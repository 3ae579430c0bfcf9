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
// Per placed job (label `job_id`, the id it was placed with; not `job`, which is
// Prometheus' scrape job), from the newest progress
// it reported (ReportJobProgress); the series exist from its first report until its
// reservation is released or expires:
//   weft_job_iteration_seconds                 gauge, its newest iteration time
//   weft_job_first_iteration_seconds           gauge, its first iteration on this
//                                              reservation, the baseline it is judged by
//   weft_job_communication_seconds             gauge, the newest iteration's time in
//                                              collectives and sends
//   weft_job_tokens_per_second                 gauge
//   weft_job_iterations                        gauge, iterations done on this reservation
//                                              (restarts at 0 when the job is placed again)
//   weft_job_nodes                             gauge, nodes it holds
//
// Every result label exists from the start (at 0), so rate() works on the first one.
// Thread-safe: prometheus-cpp metrics are atomic; the per-job series' book is locked.
#ifndef WEFT_CONTROLLER_PLACEMENT_PLACEMENT_METRICS_H_
#define WEFT_CONTROLLER_PLACEMENT_PLACEMENT_METRICS_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/placement.pb.h"

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

  // Sets `job_id`'s series from its newest `progress` on a reservation of `nodes` nodes.
  void JobReported(absl::string_view job_id, const weft::v1::JobProgress& progress,
                   int64_t nodes) ABSL_LOCKS_EXCLUDED(mu_);

  // Removes the series of every job not in `live_job_ids`.
  void RetainJobs(const absl::flat_hash_set<std::string>& live_job_ids) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One job's series, each a member of the family of the same name.
  struct JobSeries {
    prometheus::Gauge* iteration_s;
    prometheus::Gauge* first_iteration_s;
    prometheus::Gauge* communication_s;
    prometheus::Gauge* tokens_per_s;
    prometheus::Gauge* iterations;
    prometheus::Gauge* nodes;
  };

  prometheus::Family<prometheus::Counter>& placements_;
  prometheus::Gauge& reservations_;
  prometheus::Gauge& reserved_nodes_;
  prometheus::Family<prometheus::Gauge>& job_iteration_s_;
  prometheus::Family<prometheus::Gauge>& job_first_iteration_s_;
  prometheus::Family<prometheus::Gauge>& job_communication_s_;
  prometheus::Family<prometheus::Gauge>& job_tokens_per_s_;
  prometheus::Family<prometheus::Gauge>& job_iterations_;
  prometheus::Family<prometheus::Gauge>& job_nodes_;

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, JobSeries> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_PLACEMENT_METRICS_H_
