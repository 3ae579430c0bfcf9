#include "controller/placement/placement_manager.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "controller/placement/job_congestion.h"
#include "placement/topology.h"

namespace weft::controller {
namespace {

using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

// Omitted nodes named in a refusal; the rest are counted.
constexpr size_t kMaxOmittedListed = 5;

PlacementResult Classify(const absl::Status& status, bool job_held_reservation) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return job_held_reservation ? PlacementResult::kExisting : PlacementResult::kPlaced;
    case absl::StatusCode::kResourceExhausted:
      return PlacementResult::kNoCapacity;
    case absl::StatusCode::kFailedPrecondition:
      return job_held_reservation ? PlacementResult::kConflict : PlacementResult::kInfeasible;
    case absl::StatusCode::kInvalidArgument:
      return PlacementResult::kInvalid;
    default:
      return PlacementResult::kError;
  }
}

std::string DescribeOmitted(const std::vector<weft::v1::OmittedNode>& omitted) {
  std::vector<std::string> items;
  for (size_t i = 0; i < omitted.size() && i < kMaxOmittedListed; ++i) {
    items.push_back(absl::StrCat(omitted[i].node(), " (", omitted[i].reason(), ")"));
  }
  std::string text = absl::StrJoin(items, ", ");
  if (omitted.size() > kMaxOmittedListed) {
    absl::StrAppend(&text, " and ", omitted.size() - kMaxOmittedListed, " more");
  }
  return text;
}

absl::flat_hash_set<std::string> LiveJobIds(const std::vector<PlacementResponse>& live) {
  absl::flat_hash_set<std::string> ids;
  for (const PlacementResponse& reservation : live) ids.insert(reservation.job_id());
  return ids;
}

}  // namespace

PlacementManager::PlacementManager(const Inventory* inventory, const Clock* clock,
                                   PlacementOptions options, PlacementMetrics* metrics,
                                   store::ControllerStore* store)
    : inventory_(inventory),
      clock_(clock),
      congestion_(options.congestion),
      metrics_(metrics),
      store_(store),
      book_(clock, std::move(options.reservations)) {}

absl::Status PlacementManager::Restore() {
  if (store_ == nullptr) return absl::OkStatus();
  const int64_t now_us = absl::ToUnixMicros(clock_->Now());
  absl::StatusOr<int64_t> expired = store_->DeleteExpiredReservations(now_us);
  if (!expired.ok()) return expired.status();
  absl::StatusOr<uint64_t> next_sequence = store_->NextReservationSequence();
  if (!next_sequence.ok()) return next_sequence.status();
  absl::StatusOr<std::vector<store::StoredReservation>> live =
      store_->LoadReservations(now_us);
  if (!live.ok()) return live.status();
  for (const store::StoredReservation& stored : *live) {
    absl::Status restored = book_.Restore(stored.request, stored.response,
                                          absl::FromUnixMicros(stored.expires_at_us));
    if (!restored.ok()) return restored;
  }
  book_.SkipSequencesBelow(*next_sequence);
  RefreshGauges();
  WEFT_LOG(INFO) << "restored reservations=" << live->size() << " expired=" << *expired;
  return absl::OkStatus();
}

absl::Status PlacementManager::Persist(const PlacementRequest& request,
                                       const PlacementResponse& response) {
  if (store_ == nullptr) return absl::OkStatus();
  store::StoredReservation stored;
  stored.request = request;
  stored.response = response;
  stored.expires_at_us = absl::ToUnixMicros(absl::FromUnixSeconds(response.expires_at_unix_s()));
  absl::Status status =
      store_->PutReservation(stored, book_.SequenceOf(response.reservation_id()) + 1);
  if (!status.ok()) {
    WEFT_LOG(ERROR) << "cannot persist reservation id=" << response.reservation_id()
                    << " error=\"" << status.message() << "\"";
  }
  return status;
}

InventorySnapshot PlacementManager::Snapshot() const {
  return SnapshotFromNodes(inventory_->ListNodes(), congestion_, clock_->Now());
}

absl::StatusOr<PlacementResponse> PlacementManager::Place(const PlacementRequest& request) {
  bool held = false;
  if (!request.job_id().empty()) {
    for (const PlacementResponse& live : book_.List()) {
      if (live.job_id() == request.job_id()) held = true;
    }
  }
  const InventorySnapshot snapshot = Snapshot();
  absl::StatusOr<PlacementResponse> placed;
  absl::StatusOr<placement::Topology> topology =
      placement::Topology::BuildView(snapshot.snapshot);
  if (!topology.ok()) {
    // SnapshotFromNodes is built to pass; a failure here is the controller's bug.
    placed = absl::InternalError(absl::StrCat(
        "the controller's topology is inconsistent: ", topology.status().message()));
  } else {
    placed = book_.Place(*topology, weft::v1::Occupancy(), request);
    if (placed.ok()) {
      // Acknowledged only once committed; a new placement that cannot be is undone.
      if (absl::Status persisted = Persist(request, *placed); !persisted.ok()) {
        if (!held) book_.Release(placed->reservation_id()).IgnoreError();
        placed = persisted;
      }
    }
  }
  if (placed.status().code() == absl::StatusCode::kResourceExhausted &&
      !snapshot.omitted.empty()) {
    placed = absl::ResourceExhaustedError(
        absl::StrCat(placed.status().message(), "; registered but not in the topology: ",
                     DescribeOmitted(snapshot.omitted)));
  }

  const PlacementResult result = Classify(placed.status(), held);
  metrics_->PlacementDone(result);
  RefreshGauges();
  if (placed.ok()) {
    WEFT_LOG(INFO) << "placement job=" << request.job_id()
                   << " result=" << PlacementResultLabel(result)
                   << " reservation=" << placed->reservation_id()
                   << " nodes=" << placed->ring_order_size()
                   << " racks=" << absl::StrJoin(placed->racks(), ",")
                   << " expires_at_unix_s=" << placed->expires_at_unix_s();
  } else {
    WEFT_LOG(INFO) << "placement job=" << request.job_id()
                   << " result=" << PlacementResultLabel(result) << " refused=\""
                   << placed.status().message() << "\"";
  }
  return placed;
}

absl::Status PlacementManager::Release(absl::string_view reservation_id) {
  if (reservation_id.empty()) {
    return absl::InvalidArgumentError(
        "Release: the reservation id is empty; `weftctl reservations` lists them");
  }
  // Forgotten on disk first: a crash in between leaves the reservation released.
  if (store_ != nullptr) {
    if (absl::Status deleted = store_->DeleteReservation(reservation_id); !deleted.ok()) {
      return deleted;
    }
  }
  absl::Status released = book_.Release(reservation_id);
  progress_.Forget(reservation_id);
  RefreshGauges();
  if (released.ok()) WEFT_LOG(INFO) << "reservation released id=" << reservation_id;
  return released;
}

absl::StatusOr<PlacementResponse> PlacementManager::Renew(absl::string_view reservation_id,
                                                          uint32_t lease_ttl_s) {
  if (reservation_id.empty()) {
    return absl::InvalidArgumentError(
        "Renew: the reservation id is empty; `weftctl reservations` lists them");
  }
  absl::StatusOr<PlacementResponse> renewed = book_.Renew(reservation_id, lease_ttl_s);
  RefreshGauges();
  if (!renewed.ok()) return renewed;
  if (store_ != nullptr) {
    RETURN_IF_ERROR(store_->UpdateReservationLease(
        *renewed, absl::ToUnixMicros(absl::FromUnixSeconds(renewed->expires_at_unix_s()))));
  }
  return renewed;
}

weft::v1::ListReservationsResponse PlacementManager::ListReservations() {
  weft::v1::ListReservationsResponse out;
  for (PlacementResponse& live : book_.List()) *out.add_reservations() = std::move(live);
  return out;
}

absl::Status PlacementManager::ReportJobProgress(absl::string_view reservation_id,
                                                const weft::v1::JobProgress& progress) {
  if (reservation_id.empty()) {
    return absl::InvalidArgumentError(
        "ReportJobProgress: the reservation id is empty; Place returns it (reservation_id)");
  }
  const std::vector<PlacementResponse> live = book_.List();
  const auto held = std::find_if(live.begin(), live.end(), [&](const PlacementResponse& r) {
    return r.reservation_id() == reservation_id;
  });
  if (held == live.end()) {
    return absl::NotFoundError(absl::StrCat(
        "ReportJobProgress: no live reservation '", reservation_id,
        "' (never placed, released, or its lease expired); place the job first, or renew "
        "its lease"));
  }
  RETURN_IF_ERROR(ValidateJobProgress(progress));
  progress_.Report(reservation_id, progress, clock_->Now());
  metrics_->JobReported(held->job_id(), progress, held->ring_order_size());
  metrics_->RetainJobs(LiveJobIds(live));
  return absl::OkStatus();
}

weft::v1::ListJobsResponse PlacementManager::ListJobs() {
  std::vector<PlacementResponse> live = book_.List();
  absl::flat_hash_set<std::string> live_ids;
  for (const PlacementResponse& reservation : live) live_ids.insert(reservation.reservation_id());
  // Expired leases leave without a call; their progress leaves here.
  progress_.RetainOnly(live_ids);
  const std::vector<weft::v1::NodeStatus> nodes = inventory_->ListNodes();
  const NodesByName nodes_by_name = IndexNodesByName(nodes);
  weft::v1::ListJobsResponse out;
  for (PlacementResponse& reservation : live) {
    weft::v1::JobStatus* job = out.add_jobs();
    *job->mutable_congestion() = JobCongestionOf(reservation, nodes_by_name);
    if (std::optional<weft::v1::JobProgress> progress =
            progress_.Latest(reservation.reservation_id())) {
      *job->mutable_progress() = *std::move(progress);
    }
    *job->mutable_reservation() = std::move(reservation);
  }
  return out;
}

std::vector<PlacementManager::PlacedJob> PlacementManager::ListPlacedJobs() {
  std::vector<placement::ReservationBook::Placed> live = book_.ListWithRequests();
  absl::flat_hash_set<std::string> live_ids;
  for (const auto& placed : live) live_ids.insert(placed.response.reservation_id());
  progress_.RetainOnly(live_ids);
  std::vector<PlacedJob> out;
  for (auto& placed : live) {
    std::optional<weft::v1::JobProgress> progress =
        progress_.Latest(placed.response.reservation_id());
    out.push_back({std::move(placed.request), std::move(placed.response), std::move(progress)});
  }
  return out;
}

weft::v1::GetTopologyResponse PlacementManager::GetTopology() const {
  InventorySnapshot snapshot = Snapshot();
  weft::v1::GetTopologyResponse out;
  *out.mutable_snapshot() = std::move(snapshot.snapshot);
  for (weft::v1::OmittedNode& omitted : snapshot.omitted) {
    *out.add_omitted() = std::move(omitted);
  }
  return out;
}

void PlacementManager::RefreshGauges() {
  const std::vector<PlacementResponse> live = book_.List();
  int64_t nodes = 0;
  for (const PlacementResponse& reservation : live) nodes += reservation.ring_order_size();
  metrics_->SetReservations(static_cast<int64_t>(live.size()), nodes);
  metrics_->RetainJobs(LiveJobIds(live));
  if (store_ == nullptr) return;
  const absl::Time now = clock_->Now();
  {
    absl::MutexLock lock(&prune_mu_);
    if (now - last_prune_ < absl::Minutes(1)) return;
    last_prune_ = now;
  }
  absl::StatusOr<int64_t> pruned = store_->DeleteExpiredReservations(absl::ToUnixMicros(now));
  if (!pruned.ok()) {
    WEFT_LOG(WARNING) << "cannot prune expired reservations error=\""
                      << pruned.status().message() << "\"";
  }
}

}  // namespace weft::controller
