// RendezvousTable: where the ranks of a job meet, held by the controller. Each rank
// (through its node's agent) joins an exchange, named by (job id, key), with its rank,
// the job's world size and an opaque endpoint; when the last of the world_size ranks
// has joined, every waiting rank gets all endpoints (index = rank). A rank that waits
// past its own timeout gets DEADLINE_EXCEEDED naming the ranks that never arrived.
// Pure logic over an injected Clock: controller/api/rendezvous_service.h adapts it to gRPC
// and calls Sweep() on a timer; tests drive it with a FakeClock.
//
// Rules:
// - The first join opens the exchange and fixes its world size; a join with another
//   world size is FAILED_PRECONDITION naming both (ranks of one run disagree, or two
//   runs share a job id).
// - A rank may join again with the same endpoint (a retried call); a different
//   endpoint is ALREADY_EXISTS.
// - A complete exchange keeps answering joins of its ranks (a rank whose reply was
//   lost retries) until it expires.
// - An exchange nobody waits on expires `retention` after its last join or departure,
//   complete or not; a later run with the same job id starts afresh after that.
// - At most `max_exchanges` exchanges at once: beyond, RESOURCE_EXHAUSTED.
//
// Example:
//   RendezvousTable table(&clock);
//   table.Join(request, [](absl::StatusOr<std::vector<std::string>> endpoints) {...});
//   ... every 100 ms: table.Sweep();
//
// Thread-safety: thread-safe. Callbacks run on the thread of the call that decided
// them (Join, Sweep, Cancel, FailAll), after the table's mutex is released, exactly
// once per Join.
#ifndef WEFT_CONTROLLER_RENDEZVOUS_RENDEZVOUS_TABLE_H_
#define WEFT_CONTROLLER_RENDEZVOUS_RENDEZVOUS_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/weft/v1/job.pb.h"

namespace weft::controller {

struct RendezvousTableOptions {
  absl::Duration retention = absl::Seconds(60);
  size_t max_exchanges = 10000;
  uint32_t max_world_size = 65536;
  size_t max_endpoint_bytes = 64 * 1024;
  size_t max_name_bytes = 256;  // job_id and key each
  absl::Duration max_timeout = absl::Hours(1);
};

class RendezvousTable {
 public:
  // The endpoints of every rank, or why not.
  using Done = std::function<void(absl::StatusOr<std::vector<std::string>>)>;
  // Names a waiting join, for Cancel.
  using WaiterId = uint64_t;

  explicit RendezvousTable(const Clock* clock, RendezvousTableOptions options = {});

  RendezvousTable(const RendezvousTable&) = delete;
  RendezvousTable& operator=(const RendezvousTable&) = delete;

  // Joins the exchange of (request.job_id, request.key). `done` is called once: before
  // Join returns when the request is refused (INVALID_ARGUMENT, FAILED_PRECONDITION,
  // ALREADY_EXISTS, RESOURCE_EXHAUSTED) or completes the exchange; otherwise later,
  // from the Join that completes it, from Sweep (DEADLINE_EXCEEDED), Cancel or FailAll.
  // Returns the id of the waiting join, or nullopt when `done` was already called.
  std::optional<WaiterId> Join(const weft::v1::RendezvousRequest& request, Done done)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Ends a waiting join with CANCELLED (its caller went away). Its endpoint stays
  // published. No-op when the join is no longer waiting.
  void Cancel(WaiterId waiter) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends every waiting join with `status` (e.g. UNAVAILABLE on shutdown).
  void FailAll(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  // Times out the joins whose deadline has passed and drops expired exchanges.
  void Sweep() ABSL_LOCKS_EXCLUDED(mu_);

  size_t exchange_count() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t waiter_count() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using ExchangeKey = std::pair<std::string, std::string>;  // job id, key

  struct Exchange {
    uint32_t world_size = 0;
    uint32_t opened_by_rank = 0;
    std::string opened_by_node;
    std::vector<std::optional<std::string>> endpoints;  // index = rank
    uint32_t arrived = 0;
    absl::Time last_activity;
    std::vector<WaiterId> waiters;
  };

  struct Waiter {
    ExchangeKey exchange;
    absl::Time joined;
    absl::Time deadline;
    Done done;
  };

  // A callback decided under the mutex, run after it is released.
  using Decided = std::vector<std::pair<Done, absl::StatusOr<std::vector<std::string>>>>;

  absl::Status Validate(const weft::v1::RendezvousRequest& request) const;
  // The DEADLINE_EXCEEDED of a join that waited from `joined` on `exchange`.
  absl::Status TimeoutStatus(const ExchangeKey& key, const Exchange& exchange,
                             absl::Time joined, absl::Time now) const;
  static void RemoveWaiter(Exchange& exchange, WaiterId waiter);
  static void RunDecided(Decided decided);

  const Clock* const clock_;
  const RendezvousTableOptions options_;

  mutable absl::Mutex mu_;
  std::map<ExchangeKey, Exchange> exchanges_ ABSL_GUARDED_BY(mu_);
  std::map<WaiterId, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  WaiterId next_waiter_ ABSL_GUARDED_BY(mu_) = 1;
};

// "rendezvous job 'train-7' key 'weft/tcp'": how messages name an exchange.
std::string DescribeExchange(const std::string& job_id, const std::string& key);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_RENDEZVOUS_RENDEZVOUS_TABLE_H_
