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
    const weft::v1::ListReservationsResponse live = placement_->ListReservations();
    for (const weft::v1::PlacementResponse& r : live.reservations()) {
      held = held || r.job_id() == request.job_id();
    }
  }
  absl::StatusOr<weft::v1::PlacementResponse> placed = placement_->Place(request);
  if (!placed.ok() || request.precheck_seconds() == 0 || held) {
    done(std::move(placed));
    return;
  }
  if (!check_) {
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
        Checked(std::move(request), std::move(first), std::move(checked), done);
      });
  if (!started.ok()) {
    placement_->Release(reservation).IgnoreError();
    done(std::move(started));
  }
}

void PrecheckedPlacement::Checked(weft::v1::PlacementRequest request,
                                  weft::v1::PlacementResponse first,
                                  absl::StatusOr<weft::v1::CheckResponse> checked,
                                  const Done& done) {
  if (!checked.ok()) {
    placement_->Release(first.reservation_id()).IgnoreError();
    done(checked.status());
    return;
  }
  std::vector<std::string> failed;
  for (const weft::v1::NodeCheck& node : checked->nodes()) {
    if (!node.passed()) failed.push_back(node.node());
  }
  if (failed.empty()) {
    *first.mutable_precheck() = *std::move(checked);
    done(std::move(first));
    return;
  }
  placement_->Release(first.reservation_id()).IgnoreError();
  for (const std::string& node : failed) request.mutable_constraints()->add_exclude_nodes(node);
  absl::StatusOr<weft::v1::PlacementResponse> again = placement_->Place(request);
  if (!again.ok()) {
    done(absl::Status(again.status().code(),
                      absl::StrCat("after the pre-job check left out ",
                                   absl::StrJoin(failed, ", "), ": ",
                                   again.status().message())));
    return;
  }
  *again->mutable_precheck() = *std::move(checked);
  done(std::move(again));
}

}  // namespace weft::controller
