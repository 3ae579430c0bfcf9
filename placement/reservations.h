// ReservationBook: the controller's in-memory record of placements handed out and not
// yet released, each held under a lease. A scheduler that asks where to run a job gets
// its nodes reserved until the lease expires (or it renews or releases it), so two jobs
// placed back to back never get the same nodes. PlacementService (controller) adapts
// its four RPCs to Place, Release, Renew and List; the book itself knows no gRPC.
//
// Invariants:
//   * At most one live reservation per job id. Placing a job that holds one returns
//     that reservation unchanged (same id, nodes, ranks and expiry) when the request is
//     the same apart from lease_ttl_s, and FAILED_PRECONDITION naming it when not.
//   * A reservation is live while now < expires_at (by the injected Clock); expired
//     ones are dropped at the next call, never returned, and their nodes are free again.
//   * Reserved nodes are never placed twice: Place treats every live reservation's
//     nodes as taken, on top of the occupancy the caller passes.
//
// Thread-safe: every method may be called from any thread. Place runs the engine
// under the book's mutex (milliseconds for the largest jobs), which is what makes
// concurrent placements disjoint.
//
// Example:
//   ReservationBook book(&clock);
//   ASSIGN_OR_RETURN(weft::v1::PlacementResponse placed,
//                    book.Place(topology, running_jobs, request));
//   ...
//   RETURN_IF_ERROR(book.Release(placed.reservation_id()));
#ifndef WEFT_PLACEMENT_RESERVATIONS_H_
#define WEFT_PLACEMENT_RESERVATIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "placement/topology.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft::placement {

struct ReservationOptions {
  // Lease of a request or renewal that gives lease_ttl_s 0.
  absl::Duration default_ttl = absl::Minutes(5);
  // Longest lease accepted; a longer one is INVALID_ARGUMENT.
  absl::Duration max_ttl = absl::Hours(24);
  // Reservation ids are this prefix and a sequence number: "rsv-1", "rsv-2", ...
  std::string id_prefix = "rsv-";
};

class ReservationBook {
 public:
  // `clock` must outlive the book.
  explicit ReservationBook(const Clock* clock, ReservationOptions options = {});

  ReservationBook(const ReservationBook&) = delete;
  ReservationBook& operator=(const ReservationBook&) = delete;

  // Places `request` (placement/engine.h) on `topology` minus `occupancy` and minus
  // every live reservation, and reserves the result for request.lease_ttl_s (or the
  // default). Returns the answer with reservation_id and expires_at_unix_s set.
  // Errors: the engine's; INVALID_ARGUMENT for a lease longer than max_ttl;
  // FAILED_PRECONDITION when the job holds a reservation for a different request.
  absl::StatusOr<weft::v1::PlacementResponse> Place(const Topology& topology,
                                                    const weft::v1::Occupancy& occupancy,
                                                    const weft::v1::PlacementRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Ends a live reservation; its nodes are free at once. NOT_FOUND (saying it may have
  // expired) when no live reservation has that id.
  absl::Status Release(absl::string_view reservation_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Extends a live reservation to now + lease_ttl_s (0: the default) and returns it.
  // NOT_FOUND as Release; INVALID_ARGUMENT for a lease longer than max_ttl.
  absl::StatusOr<weft::v1::PlacementResponse> Renew(absl::string_view reservation_id,
                                                    uint32_t lease_ttl_s)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The live reservations, oldest first.
  std::vector<weft::v1::PlacementResponse> List() const ABSL_LOCKS_EXCLUDED(mu_);

  // The same, each with the request it was placed for (what the job declared of its
  // traffic: pattern or parallelism, bytes per iteration, QoS class).
  struct Placed {
    weft::v1::PlacementRequest request;  // lease_ttl_s cleared
    weft::v1::PlacementResponse response;
  };
  std::vector<Placed> ListWithRequests() const ABSL_LOCKS_EXCLUDED(mu_);

  // The nodes of live reservations, as occupancy entries of their jobs.
  weft::v1::Occupancy Reserved() const ABSL_LOCKS_EXCLUDED(mu_);

  // Puts back a reservation made before a restart (the controller's store keeps
  // them): `request` as placed, `response` as answered, live until `expires_at`.
  // Later ids continue above its sequence. INVALID_ARGUMENT when the id does not
  // carry this book's prefix and a sequence number, or its id or job is held.
  absl::Status Restore(const weft::v1::PlacementRequest& request,
                       const weft::v1::PlacementResponse& response, absl::Time expires_at)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ids given from now on are at least `next_sequence` (ids of reservations released
  // before a restart are never reused).
  void SkipSequencesBelow(uint64_t next_sequence) ABSL_LOCKS_EXCLUDED(mu_);
  // The sequence number of `reservation_id` (0 when it is not one of this book's).
  uint64_t SequenceOf(absl::string_view reservation_id) const;

 private:
  struct Entry {
    weft::v1::PlacementRequest request;  // lease_ttl_s cleared, for idempotence checks
    weft::v1::PlacementResponse response;
    absl::Time expires_at;
  };

  absl::StatusOr<absl::Duration> Ttl(uint32_t lease_ttl_s) const;
  // Drops expired entries. The const version is for readers: it only skips them.
  void ExpireLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool LiveLocked(const Entry& entry) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const ReservationOptions options_;
  mutable absl::Mutex mu_;
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  // Keyed by sequence number, so iteration is oldest first.
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> by_id_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> by_job_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::placement

#endif  // WEFT_PLACEMENT_RESERVATIONS_H_
