#include "controller/placement/prechecked_placement.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::controller {

PrecheckedPlacement::PrecheckedPlacement(PlacementManager* placement, CheckRunner check)
    : placement_(placement), check_(std::move(check)) {}

void PrecheckedPlacement::Place(const weft::v1::PlacementRequest& request, Done done) {
  bool held = false;
  if (request.precheck_seconds() > 0) {
    bool running;
    {
      absl::MutexLock lock(&mu_);
      running = !checking_.insert(request.job_id()).second;
    }
    if (running) {
      done(absl::UnavailableError(absl::StrCat(
          "job '", request.job_id(),
          "' is being placed with a pre-job check; ask again once that call has answered")));
      return;
    }
    // The job now holds its place in checking_: every answer below releases it first.
    const weft::v1::ListReservationsResponse live = placement_->ListReservations();
    for (const weft::v1::PlacementResponse& r : live.reservations()) {
      held = held || r.job_id() == request.job_id();
    }
  }
  absl::StatusOr<weft::v1::PlacementResponse> placed = placement_->Place(request);
  if (!placed.ok() || request.precheck_seconds() == 0 || held) {
    if (request.precheck_seconds() > 0) CheckEnded(request.job_id());
    done(std::move(placed));
    return;
  }
  if (!check_) {
    CheckEnded(request.job_id());
    placement_->Release(placed->reservation_id()).IgnoreError();
    done(absl::FailedPreconditionError(
        "precheck_seconds asks for a pre-job check, which this controller cannot run "
        "(pingmesh is off)"));
    return;
  }
  weft::v1::CheckRequest check;
  for (const std::string& node : placed->ring_order()) check.add_nodes(node);
  check.set_seconds(request.precheck_seconds());
  const std::string reservation = placed->reservation_id();
  absl::Status started =
      check_(check, [this, request, first = *std::move(placed),
                     done](absl::StatusOr<weft::v1::CheckResponse> checked) mutable {
        const std::string job = request.job_id();
        absl::StatusOr<weft::v1::PlacementResponse> answer =
            Checked(std::move(request), std::move(first), std::move(checked));
        CheckEnded(job);
        done(std::move(answer));
      });
  if (!started.ok()) {
    placement_->Release(reservation).IgnoreError();
    CheckEnded(request.job_id());
    done(std::move(started));
  }
}

void PrecheckedPlacement::CheckEnded(const std::string& job) {
  absl::MutexLock lock(&mu_);
  checking_.erase(job);
}

absl::StatusOr<weft::v1::PlacementResponse> PrecheckedPlacement::Checked(
    weft::v1::PlacementRequest request, weft::v1::PlacementResponse first,
    absl::StatusOr<weft::v1::CheckResponse> checked) {
  if (!checked.ok()) {
    placement_->Release(first.reservation_id()).IgnoreError();
    return checked.status();
  }
  std::vector<std::string> failed;
  for (const weft::v1::NodeCheck& node : checked->nodes()) {
    if (!node.passed()) failed.push_back(node.node());
  }
  if (failed.empty()) {
    *first.mutable_precheck() = *std::move(checked);
    return first;
  }
  placement_->Release(first.reservation_id()).IgnoreError();
  for (const std::string& node : failed) request.mutable_constraints()->add_exclude_nodes(node);
  absl::StatusOr<weft::v1::PlacementResponse> again = placement_->Place(request);
  if (!again.ok()) {
    return absl::Status(again.status().code(),
                        absl::StrCat("after the pre-job check left out ",
                                     absl::StrJoin(failed, ", "), ": ",
                                     again.status().message()));
  }
  *again->mutable_precheck() = *std::move(checked);
  return again;
}

}  // namespace weft::controller
