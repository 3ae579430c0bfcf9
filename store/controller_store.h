// ControllerStore: the weft-controller's durable state, one SQLite database
// (`<state_dir>/controller.db`, store/sqlite.h) with the schema and its migrations in
// controller_store.cc. It holds what must survive a restart or a kill -9:
//   * nodes: every node ever registered (name, rack, pod, its last NodeInfo), the
//     ceiling of the session epochs granted to it, and its drain (who, reason, source);
//   * reservations: live placements with their request, answer and lease expiry, and
//     the next reservation sequence number (ids are never reused);
//   * events: the event log, pruned to its capacity;
//   * audit: the audit log, never pruned.
// The inventory, the placement manager, the event log and the audit log write through
// it; on start the controller reads everything back before serving.
//
// Durability: node, reservation and audit writes commit with synchronous=FULL before
// they return (they back replies to clients); event writes with synchronous=NORMAL
// (they survive a kill -9 of the controller, not a power cut).
//
// Open creates the state directory (mode 0700) on first start and takes an exclusive
// flock on `<state_dir>/LOCK`, so a second controller on the same directory is
// refused instead of interleaving writes. A corrupt database or one with a newer
// schema is refused with an error naming the file; it is never overwritten.
//
// Thread-safe: every method may be called from any thread (the Database serializes
// them). Nothing here calls back into the controller.
#ifndef WEFT_STORE_CONTROLLER_STORE_H_
#define WEFT_STORE_CONTROLLER_STORE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/weft/v1/admin.pb.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/placement.pb.h"
#include "store/sqlite.h"

namespace weft::store {

// The schema steps of controller.db, oldest first (exposed for tests).
const std::vector<Migration>& ControllerMigrations();

// The database file inside a state directory.
inline constexpr char kControllerDbName[] = "controller.db";

struct StoredNode {
  std::string name;
  std::string rack;
  std::string pod;
  weft::v1::NodeInfo info;
  // No session epoch above this was ever granted to the node.
  uint64_t epoch_ceiling = 0;
  bool drained = false;
  weft::v1::DrainSource drained_by = weft::v1::DRAIN_SOURCE_UNSPECIFIED;
  std::string drain_reason;
  // The caller who drained it ("" when unknown or not drained).
  std::string drained_who;
};

struct StoredReservation {
  // The request as placed (lease_ttl_s included) and the answer given.
  weft::v1::PlacementRequest request;
  weft::v1::PlacementResponse response;
  int64_t expires_at_us = 0;
};

struct StoredAudit {
  uint64_t sequence = 0;  // assigned by AppendAudit
  int64_t at_us = 0;
  std::string who;
  std::string role;
  std::string method;
  std::string target;
  std::string result;
};

struct AuditFilter {
  int64_t since_us = std::numeric_limits<int64_t>::min();
  std::string who;
  // Exact method, or its last path component.
  std::string method;
  // The newest `limit` matches; 0 = all.
  uint64_t limit = 0;
};

class ControllerStore {
 public:
  // Opens (creating when absent) `<state_dir>/controller.db`. Errors:
  // FAILED_PRECONDITION for a directory another process holds, a newer schema or a
  // state dir that is not a directory; DATA_LOSS for a corrupt file; UNAVAILABLE or
  // PERMISSION_DENIED when it cannot be created or opened. Each names the path.
  // `acknowledged` is what node, reservation and audit writes use: keep the default;
  // kBestEffort exists for bench/store, to measure what synchronous=FULL costs.
  static absl::StatusOr<std::unique_ptr<ControllerStore>> Open(
      const std::string& state_dir, Durability acknowledged = Durability::kAcknowledged);
  // The same schema in memory (unit tests).
  static absl::StatusOr<std::unique_ptr<ControllerStore>> OpenInMemory();

  ~ControllerStore();
  ControllerStore(const ControllerStore&) = delete;
  ControllerStore& operator=(const ControllerStore&) = delete;

  // Nodes. PutNodes writes all of them in one transaction.
  absl::Status PutNode(const StoredNode& node);
  absl::Status PutNodes(const std::vector<StoredNode>& nodes);
  absl::StatusOr<std::vector<StoredNode>> LoadNodes();

  // Reservations. PutReservation also raises the stored next sequence to at least
  // `next_sequence`, in the same transaction.
  absl::Status PutReservation(const StoredReservation& reservation, uint64_t next_sequence);
  // A renewal: the stored answer and lease of `response`'s reservation (its request
  // stays as placed). NOT_FOUND when it is not stored.
  absl::Status UpdateReservationLease(const weft::v1::PlacementResponse& response,
                                      int64_t expires_at_us);
  absl::Status DeleteReservation(absl::string_view reservation_id);
  // Deletes those whose lease ended at or before `now_us`; returns how many.
  absl::StatusOr<int64_t> DeleteExpiredReservations(int64_t now_us);
  // Live (expires_at_us > now_us) reservations, oldest first.
  absl::StatusOr<std::vector<StoredReservation>> LoadReservations(int64_t now_us);
  // The stored next reservation sequence (1 when none was stored).
  absl::StatusOr<uint64_t> NextReservationSequence();

  // Events (best-effort durability, see above). PruneEvents keeps the newest
  // `capacity`. LoadEvents returns the newest `limit`, oldest first.
  absl::Status AppendEvent(const weft::v1::Event& event);
  absl::Status PruneEvents(uint64_t capacity);
  absl::StatusOr<std::vector<weft::v1::Event>> LoadEvents(uint64_t limit);

  // Audit entries; AppendAudit returns the sequence given.
  absl::StatusOr<uint64_t> AppendAudit(const StoredAudit& entry);
  absl::StatusOr<std::vector<StoredAudit>> ListAudit(const AuditFilter& filter);

  // The database itself, for benchmarks and tests.
  Database& database() { return *db_; }

 private:
  ControllerStore(std::unique_ptr<Database> db, int lock_fd, Durability acknowledged)
      : db_(std::move(db)), lock_fd_(lock_fd), acknowledged_(acknowledged) {}

  std::unique_ptr<Database> db_;
  int lock_fd_ = -1;
  const Durability acknowledged_;
};

}  // namespace weft::store

#endif  // WEFT_STORE_CONTROLLER_STORE_H_
