// AuditLog: who changed what, when, and with what result. The gRPC layer records one
// entry for every mutating call (drain, undrain, place, release, renew, policy and
// rollout changes), after the call ran and before its reply is sent, including the
// calls it refused (result is then the status code and message). `weftctl audit`
// reads it back through AdminService.ListAudit.
//
// Backed by the controller's store (store/controller_store.h): Record commits the entry
// with synchronous=FULL before it returns, so an acknowledged call is never missing
// from the log after a crash. Without a store (unit tests) entries live in memory.
// The log is append-only; nothing prunes it (an operator may archive the database).
//
// Thread-safe: every method may be called from any thread. Record blocks for one
// disk commit (about a millisecond); do not call it while holding a lock that
// telemetry ingest needs.
//
// Example (what an interceptor or handler does):
//   AuditEntry entry;
//   entry.at = clock->Now();
//   entry.who = "alice";              // certificate CN or token name
//   entry.role = "operator";
//   entry.method = "/weft.v1.AdminService/DrainNode";
//   entry.target = "gpu-a01";
//   entry.result = AuditResult(status);   // "OK" or "PERMISSION_DENIED: ..."
//   RETURN_IF_ERROR(audit->Record(entry));
//   AuditQuery query;
//   query.who = "alice";
//   ASSIGN_OR_RETURN(std::vector<AuditEntry> entries, audit->List(query));
#ifndef WEFT_CONTROLLER_API_AUDIT_LOG_H_
#define WEFT_CONTROLLER_API_AUDIT_LOG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft::store {
class ControllerStore;
}  // namespace weft::store

namespace weft::controller {

struct AuditEntry {
  // Given by Record (grows by one per entry, across restarts); ignored on input.
  uint64_t sequence = 0;
  absl::Time at;
  // The authenticated caller: a certificate's CN (a node name for agents) or a bearer
  // token's name; "anonymous" on a plaintext listener.
  std::string who;
  // "viewer", "scheduler", "operator", "admin" (or "agent").
  std::string role;
  // The full gRPC method name, e.g. "/weft.v1.AdminService/DrainNode".
  std::string method;
  // What the call acted on: a node name, reservation id, job id, policy name.
  std::string target;
  // "OK", or "<CODE>: <message>" for a refused or failed call (AuditResult).
  std::string result;
};

struct AuditQuery {
  // Only entries at or after this time.
  absl::Time since = absl::InfinitePast();
  // Only this caller, when not empty.
  std::string who;
  // Only this method, when not empty: the full name, or its last component
  // ("DrainNode" matches "/weft.v1.AdminService/DrainNode").
  std::string method;
  // The newest `limit` matching entries; 0 means all.
  size_t limit = 0;
};

// "OK", or the status code's name and the message: "PERMISSION_DENIED: role viewer
// may not call DrainNode".
std::string AuditResult(const absl::Status& status);

class AuditLog {
 public:
  // `store` must outlive the log; nullptr keeps the entries in memory only.
  explicit AuditLog(store::ControllerStore* store);

  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends `entry` (its sequence is assigned) and, with a store, commits it durably
  // before returning. INVALID_ARGUMENT when who or method is empty; the store's error
  // (e.g. UNAVAILABLE for a full disk) when the commit fails, in which case nothing
  // was recorded and the caller should fail the call it audits.
  absl::Status Record(const AuditEntry& entry);

  // Matching entries, oldest first. Fails only when the store cannot be read.
  absl::StatusOr<std::vector<AuditEntry>> List(const AuditQuery& query) const;

 private:
  store::ControllerStore* const store_;
  mutable absl::Mutex mu_;
  // In-memory mode only.
  std::vector<AuditEntry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_API_AUDIT_LOG_H_
