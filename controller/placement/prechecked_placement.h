// PrecheckedPlacement: placement with a pre-job check (PlacementRequest.precheck_seconds,
// `weftctl place --precheck S`). It reserves as PlacementManager::Place does, has the
// placed nodes checked (the pingmesh pre-job check, through a CheckRunner), and answers
// from the check's callback:
//   - every node passed: the placement, with the check in `precheck`;
//   - a node failed: the first reservation is released and the job placed once more
//     without the failed nodes (the replacements are not checked again), with the
//     check in `precheck`; if that placement fails, its error names the nodes left out;
//   - the check could not start or run: the reservation is released and the error
//     returned, so no unchecked reservation is left behind.
// A request without precheck_seconds, and one for a job that already holds a
// reservation (Place returns that one, checked or not when it was made), is answered
// at once without a check. A request with precheck_seconds for a job whose checked
// placement is still running is refused (UNAVAILABLE: ask again once it answered), so
// it can neither get that reservation unchecked nor lose it to the check's outcome. Logic only: the gRPC adapter (controller/api/
// placement_service.h) finishes its call from `done`.
//
// Thread-safe: Place may be called from any thread; `done` runs on the caller's thread
// (no check) or the check runner's (the pingmesh ticker).
#ifndef WEFT_CONTROLLER_PLACEMENT_PRECHECKED_PLACEMENT_H_
#define WEFT_CONTROLLER_PLACEMENT_PRECHECKED_PLACEMENT_H_

#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/placement/placement_manager.h"
#include "proto/weft/v1/pingmesh.pb.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::controller {

class PrecheckedPlacement {
 public:
  using CheckDone = std::function<void(absl::StatusOr<weft::v1::CheckResponse>)>;
  // Starts a check that calls `done` once when it ends; an error return means it did
  // not start and `done` is never called (PingmeshManager::StartCheck).
  using CheckRunner =
      std::function<absl::Status(const weft::v1::CheckRequest& request, CheckDone done)>;
  using Done = std::function<void(absl::StatusOr<weft::v1::PlacementResponse>)>;

  // `placement` outlives this. `check` empty: this controller cannot check, and a
  // request asking for a check is refused with FAILED_PRECONDITION.
  PrecheckedPlacement(PlacementManager* placement, CheckRunner check);

  // Calls `done` exactly once, as described above.
  void Place(const weft::v1::PlacementRequest& request, Done done);

 private:
  // The answer, given the check's of the first placement `first` of `request`.
  absl::StatusOr<weft::v1::PlacementResponse> Checked(
      weft::v1::PlacementRequest request, weft::v1::PlacementResponse first,
      absl::StatusOr<weft::v1::CheckResponse> checked);

  // The job is no longer being checked (its answer is about to be given).
  void CheckEnded(const std::string& job) ABSL_LOCKS_EXCLUDED(mu_);

  PlacementManager* const placement_;
  const CheckRunner check_;
  absl::Mutex mu_;
  absl::flat_hash_set<std::string> checking_ ABSL_GUARDED_BY(mu_);  // job ids
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_PLACEMENT_PRECHECKED_PLACEMENT_H_
