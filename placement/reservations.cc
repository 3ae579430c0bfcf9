#include "placement/reservations.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "google/protobuf/util/message_differencer.h"
#include "placement/engine.h"

namespace weft::placement {

using weft::v1::Occupancy;
using weft::v1::PlacementRequest;
using weft::v1::PlacementResponse;

ReservationBook::ReservationBook(const Clock* clock, ReservationOptions options)
    : clock_(clock), options_(std::move(options)) {}

absl::StatusOr<absl::Duration> ReservationBook::Ttl(uint32_t lease_ttl_s) const {
  if (lease_ttl_s == 0) return options_.default_ttl;
  const absl::Duration ttl = absl::Seconds(lease_ttl_s);
  if (ttl > options_.max_ttl) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease_ttl_s ", lease_ttl_s, " is too long; accepted: 1 to ",
                     absl::ToInt64Seconds(options_.max_ttl), " (0: the default, ",
                     absl::ToInt64Seconds(options_.default_ttl), ")"));
  }
  return ttl;
}

bool ReservationBook::LiveLocked(const Entry& entry) const {
  return clock_->Now() < entry.expires_at;
}

void ReservationBook::ExpireLocked() {
  const absl::Time now = clock_->Now();
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now < it->second.expires_at) {
      ++it;
      continue;
    }
    by_id_.erase(it->second.response.reservation_id());
    by_job_.erase(it->second.response.job_id());
    it = entries_.erase(it);
  }
}

absl::StatusOr<PlacementResponse> ReservationBook::Place(const Topology& topology,
                                                         const Occupancy& occupancy,
                                                         const PlacementRequest& request) {
  ASSIGN_OR_RETURN(const absl::Duration ttl, Ttl(request.lease_ttl_s()));
  PlacementRequest key = request;
  key.clear_lease_ttl_s();

  absl::MutexLock lock(&mu_);
  ExpireLocked();
  if (auto it = by_job_.find(request.job_id()); it != by_job_.end()) {
    const Entry& held = entries_.at(it->second);
    if (google::protobuf::util::MessageDifferencer::Equals(held.request, key)) {
      return held.response;
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "job '", request.job_id(), "' already holds reservation ",
        held.response.reservation_id(), " (", held.response.ring_order_size(),
        " nodes) for a different request; release it first"));
  }

  Occupancy taken = occupancy;
  for (const auto& [sequence, entry] : entries_) {
    for (const std::string& node : entry.response.ring_order()) {
      Occupancy::Entry* e = taken.add_entries();
      e->set_node(node);
      e->set_job_id(entry.response.job_id());
    }
  }
  ASSIGN_OR_RETURN(PlacementResponse placed, weft::placement::Place(topology, taken, request));

  const uint64_t sequence = next_sequence_++;
  const absl::Time expires_at = clock_->Now() + ttl;
  placed.set_reservation_id(absl::StrCat(options_.id_prefix, sequence));
  placed.set_expires_at_unix_s(absl::ToUnixSeconds(expires_at));
  by_id_[placed.reservation_id()] = sequence;
  by_job_[placed.job_id()] = sequence;
  entries_[sequence] = Entry{std::move(key), placed, expires_at};
  return placed;
}

absl::Status ReservationBook::Release(absl::string_view reservation_id) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  auto it = by_id_.find(reservation_id);
  if (it == by_id_.end()) {
    return absl::NotFoundError(absl::StrCat("no live reservation '", reservation_id,
                                            "'; it may have expired or been released"));
  }
  const uint64_t sequence = it->second;
  by_job_.erase(entries_.at(sequence).response.job_id());
  by_id_.erase(it);
  entries_.erase(sequence);
  return absl::OkStatus();
}

absl::StatusOr<PlacementResponse> ReservationBook::Renew(absl::string_view reservation_id,
                                                         uint32_t lease_ttl_s) {
  ASSIGN_OR_RETURN(const absl::Duration ttl, Ttl(lease_ttl_s));
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  auto it = by_id_.find(reservation_id);
  if (it == by_id_.end()) {
    return absl::NotFoundError(absl::StrCat("no live reservation '", reservation_id,
                                            "'; it may have expired or been released"));
  }
  Entry& entry = entries_.at(it->second);
  entry.expires_at = clock_->Now() + ttl;
  entry.response.set_expires_at_unix_s(absl::ToUnixSeconds(entry.expires_at));
  return entry.response;
}

std::vector<PlacementResponse> ReservationBook::List() const {
  std::vector<PlacementResponse> out;
  for (Placed& live : ListWithRequests()) out.push_back(std::move(live.response));
  return out;
}

std::vector<ReservationBook::Placed> ReservationBook::ListWithRequests() const {
  absl::MutexLock lock(&mu_);
  std::vector<Placed> out;
  for (const auto& [sequence, entry] : entries_) {
    if (LiveLocked(entry)) out.push_back({entry.request, entry.response});
  }
  return out;
}

Occupancy ReservationBook::Reserved() const {
  absl::MutexLock lock(&mu_);
  Occupancy out;
  for (const auto& [sequence, entry] : entries_) {
    if (!LiveLocked(entry)) continue;
    for (const std::string& node : entry.response.ring_order()) {
      Occupancy::Entry* e = out.add_entries();
      e->set_node(node);
      e->set_job_id(entry.response.job_id());
    }
  }
  return out;
}

uint64_t ReservationBook::SequenceOf(absl::string_view reservation_id) const {
  uint64_t sequence = 0;
  if (!absl::ConsumePrefix(&reservation_id, options_.id_prefix) ||
      !absl::SimpleAtoi(reservation_id, &sequence)) {
    return 0;
  }
  return sequence;
}

absl::Status ReservationBook::Restore(const PlacementRequest& request,
                                      const PlacementResponse& response,
                                      absl::Time expires_at) {
  const uint64_t sequence = SequenceOf(response.reservation_id());
  if (sequence == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot restore reservation '", response.reservation_id(), "': ids are ",
        options_.id_prefix, "<sequence>"));
  }
  PlacementRequest key = request;
  key.clear_lease_ttl_s();
  absl::MutexLock lock(&mu_);
  if (by_id_.contains(response.reservation_id()) || by_job_.contains(response.job_id())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot restore reservation '", response.reservation_id(), "' of job '",
        response.job_id(), "': that id or job already holds one"));
  }
  by_id_[response.reservation_id()] = sequence;
  by_job_[response.job_id()] = sequence;
  entries_[sequence] = Entry{std::move(key), response, expires_at};
  next_sequence_ = std::max(next_sequence_, sequence + 1);
  return absl::OkStatus();
}

void ReservationBook::SkipSequencesBelow(uint64_t next_sequence) {
  absl::MutexLock lock(&mu_);
  next_sequence_ = std::max(next_sequence_, next_sequence);
}

}  // namespace weft::placement
