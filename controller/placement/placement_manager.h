// PlacementManager: the controller's placement concern. It places jobs on the cluster
// as the inventory sees it at the moment of the call (SnapshotFromNodes in
// cluster_snapshot.h: only HEALTHY, undrained, reporting nodes with a rack are
// eligible), holds the reservations (a placement::ReservationBook over the controller's
// Clock, so leases expire by that clock), and records PlacementMetrics.
// PlacementServiceImpl adapts weft.v1.PlacementService to it; the controller's ticker
// calls RefreshGauges so that expired leases leave the gauges without a call.
//
// The controller knows no running jobs besides its reservations, so a placement avoids
// exactly the nodes of live reservations (and the ineligible ones).
//
// Jobs: a placed job reports its newest iteration (ReportJobProgress) into a
// JobProgressTable kept in memory only (lost on restart; jobs report again every
// iteration), dropped with its reservation; ListJobs joins each live reservation with
// its progress and the congestion on its nodes (JobCongestionOf, job_congestion.h).
//
// Durable state: with a ControllerStore, a reservation (its request, its nodes and
// ranks, its lease) is committed before Place or Renew returns it, Release deletes it
// before the book forgets it, and Restore() puts the live ones back after a restart
// (leases keep their absolute expiry, to the second; ids are never reused). A
// reservation is one row, so it is never visible without its nodes. When a commit
// fails the call fails: a new placement is taken back; a renewal stays extended in
// memory only.
//
// Thread-safe: every method may be called from any thread. Place runs the engine under
// the book's mutex (milliseconds for the largest jobs); with a store, Place, Release
// and Renew also wait for one disk commit, outside that mutex.
//
// Example:
//   PlacementManager placement(&inventory, &clock, {}, &placement_metrics);
//   ASSIGN_OR_RETURN(weft::v1::PlacementResponse placed, placement.Place(request));
#ifndef WEFT_CONTROLLER_PLACEMENT_PLACEMENT_MANAGER_H_
#define WEFT_CONTROLLER_PLACEMENT_PLACEMENT_MANAGER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/placement/cluster_snapshot.h"
#include "controller/inventory/inventory.h"
#include "controller/placement/job_progress_table.h"
#include "controller/placement/placement_metrics.h"
#include "placement/reservations.h"
#include "proto/weft/v1/placement.pb.h"
#include "store/controller_store.h"

namespace weft::controller {

struct PlacementOptions {
  placement::ReservationOptions reservations;
  CongestionScale congestion;
};

class PlacementManager {
 public:
  // `inventory`, `clock`, `metrics` and `store` (may be null: nothing persisted)
  // must outlive the manager.
  PlacementManager(const Inventory* inventory, const Clock* clock, PlacementOptions options,
                   PlacementMetrics* metrics, store::ControllerStore* store = nullptr);

  // Puts back the store's live reservations (dropping expired ones from it). Call
  // once, before serving. OK without a store.
  absl::Status Restore();

  PlacementManager(const PlacementManager&) = delete;
  PlacementManager& operator=(const PlacementManager&) = delete;

  // Places `request` on the current snapshot and reserves the nodes (see
  // ReservationBook::Place: the same job and request again returns the same
  // reservation; the engine's refusals pass through unchanged, except that a
  // RESOURCE_EXHAUSTED refusal also names registered nodes left out of the topology).
  absl::StatusOr<weft::v1::PlacementResponse> Place(const weft::v1::PlacementRequest& request);

  // ReservationBook::Release and Renew; INVALID_ARGUMENT for an empty id.
  absl::Status Release(absl::string_view reservation_id);
  absl::StatusOr<weft::v1::PlacementResponse> Renew(absl::string_view reservation_id,
                                                    uint32_t lease_ttl_s);

  // The live reservations, oldest first.
  weft::v1::ListReservationsResponse ListReservations();

  // Keeps `progress` as the newest of the job holding `reservation_id` (stamped with
  // the clock's now). INVALID_ARGUMENT for an empty id or a bad number
  // (ValidateJobProgress); NOT_FOUND naming the id when no live reservation has it.
  absl::Status ReportJobProgress(absl::string_view reservation_id,
                                 const weft::v1::JobProgress& progress);

  // Every live reservation, oldest first, with its newest progress (unset before the
  // first report) and the congestion on its nodes now.
  weft::v1::ListJobsResponse ListJobs();

  // Every live reservation, oldest first, with the request it was placed for and its
  // newest progress (nullopt before the first report): what the tuner reads of the
  // running jobs' traffic and KPIs.
  struct PlacedJob {
    weft::v1::PlacementRequest request;
    weft::v1::PlacementResponse reservation;
    std::optional<weft::v1::JobProgress> progress;
  };
  std::vector<PlacedJob> ListPlacedJobs();

  // The snapshot placement would use now, and the registered nodes it leaves out.
  weft::v1::GetTopologyResponse GetTopology() const;

  // Sets weft_controller_reservations and _reserved_nodes from the live reservations,
  // and at most once a minute deletes expired reservations from the store.
  void RefreshGauges();

 private:
  InventorySnapshot Snapshot() const;
  // Commits a reservation as answered (OK without a store).
  absl::Status Persist(const weft::v1::PlacementRequest& request,
                       const weft::v1::PlacementResponse& response);

  const Inventory* const inventory_;
  const Clock* const clock_;
  const CongestionScale congestion_;
  PlacementMetrics* const metrics_;
  store::ControllerStore* const store_;
  placement::ReservationBook book_;
  JobProgressTable progress_;
  absl::Mutex prune_mu_;
  absl::Time last_prune_ ABSL_GUARDED_BY(prune_mu_) = absl::InfinitePast();
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_PLACEMENT_MANAGER_H_
