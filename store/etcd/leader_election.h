// LeaderElection: one replica's candidacy for leadership of a Weft controller group
// on etcd (issue 23), and the fence every authoritative write goes through.
//
//   * Campaign grants an etcd lease (TTL configurable, default 5 s), keeps it alive on
//     its own thread, and campaigns with etcd's Election service until this replica's
//     key `<election>/<lease id in hex>` is the oldest one. The key's value says who
//     and where ("<candidate>\n<address>"), so followers can point clients at it.
//   * The leader's epoch is that key's create revision: it grows with every new
//     leader, and agents can keep the highest they have seen.
//   * The replica steps down before its lease can expire: LeaseTimer (lease_timer.h)
//     on the injected Clock decides from the last renewal that succeeded; from then on
//     IsLeader() is false, AwaitLoss returns, and GuardedTxn refuses without sending.
//     A step-down is final for that lease (revoked, best effort, so the key goes at
//     once): the replica campaigns again with a new one and gets a new epoch.
//   * Fencing does not rely on that: GuardedTxn is one etcd transaction guarded by
//     CREATE_REVISION(key) == epoch, so a deposed leader that still believes it leads
//     (paused, its clock stalled) cannot commit; it gets FAILED_PRECONDITION.
//
// Example (the controller's composition root, one per replica):
//   LeaderElection election(client.get(), &clock, {.candidate = "ctl-a",
//                                                  .address = "10.0.0.1:7070"});
//   ASSIGN_OR_RETURN(Fence fence, election.Campaign(absl::InfiniteDuration()));
//   ... serve; every authoritative write: election.GuardedTxn({}, ops)
//   election.AwaitLoss(absl::InfiniteFuture());  // then stop serving, campaign again
//
// Thread-safe: Campaign from one thread at a time; everything else from any thread.
// The keepalive thread runs from the first Campaign until the destructor or Resign.
#ifndef WEFT_STORE_ETCD_LEADER_ELECTION_H_
#define WEFT_STORE_ETCD_LEADER_ELECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "proto/etcd/rpc.pb.h"
#include "store/etcd/etcd_client.h"
#include "store/etcd/lease_timer.h"

namespace weft::store::etcd {

struct ElectionOptions {
  // The election's key prefix in etcd, one per controller group.
  std::string election = "/weft/controller/leader";
  // This replica's name and the address it serves clients and agents on.
  std::string candidate;
  std::string address;
  // The lease TTL, whole seconds, at least 1 (etcd raises it to its own minimum,
  // ceil(1.5 × election timeout): 2 s with etcd's defaults).
  absl::Duration lease_ttl = absl::Seconds(5);
};

// Proof of leadership: the leader key and its create revision (the epoch).
struct Fence {
  std::string key;
  int64_t epoch = 0;
};

// Who leads, as a follower sees it.
struct LeaderInfo {
  std::string candidate;
  std::string address;
  std::string key;
  int64_t epoch = 0;
};

// The current leader of `election`; NOT_FOUND when nobody leads.
absl::StatusOr<LeaderInfo> CurrentLeader(EtcdClient& client, const std::string& election);

// One etcd transaction: `compares` and CREATE_REVISION(fence.key) == fence.epoch; if
// all hold, `success` is applied. FAILED_PRECONDITION ("deposed") when the fence no
// longer holds, ABORTED when only the caller's compares failed; nothing is applied
// in either case.
absl::StatusOr<etcdserverpb::TxnResponse> GuardedTxn(
    EtcdClient& client, const Fence& fence, std::vector<etcdserverpb::Compare> compares,
    std::vector<etcdserverpb::RequestOp> success);

class LeaderElection {
 public:
  // `client` and `clock` outlive this.
  LeaderElection(EtcdClient* client, const Clock* clock, ElectionOptions options);
  // Stops the keepalive thread and any campaign; does not revoke the lease (a replica
  // that exits without Resign is replaced when its lease expires).
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Validates the options: INVALID_ARGUMENT naming the field and the accepted range.
  static absl::Status Validate(const ElectionOptions& options);

  // Campaigns until this replica leads (returns its fence), `timeout` passes
  // (DEADLINE_EXCEEDED; real time: it is a wait inside etcd), Stop/Resign
  // (CANCELLED), or etcd fails. Grants a new lease when it holds none or lost it.
  absl::StatusOr<Fence> Campaign(absl::Duration timeout);

  // Whether this replica may act as leader now: it won and its last renewal is recent
  // enough on the Clock (LeaseTimer::Safe).
  bool IsLeader() const;
  // The fence of the current leadership; nullopt when not leading.
  std::optional<Fence> fence() const;
  // Waits on the Clock until leadership is lost or `deadline`; true when lost (or
  // never held).
  bool AwaitLoss(absl::Time deadline) const;
  // The lease's timing, for tests and metrics.
  LeaseTimer timer() const;

  // GuardedTxn with this replica's fence: FAILED_PRECONDITION without sending when it
  // does not lead (by IsLeader), else as the free function.
  absl::StatusOr<etcdserverpb::TxnResponse> GuardedTxn(
      std::vector<etcdserverpb::Compare> compares,
      std::vector<etcdserverpb::RequestOp> success);

  // Gives leadership up now: revokes the lease (its key goes with it, so the next
  // candidate wins at once) and stops renewing. A later Campaign starts afresh.
  absl::Status Resign();

  // Ends a running Campaign (CANCELLED) and the keepalive thread for good; may be
  // called from any thread, the destructor calls it. Does not revoke the lease.
  void Stop();

 private:
  void KeepAliveLoop();
  void LoseLocked(const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool LeadingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Conditions (no clock reads inside: the Clock's own lock must not nest in ours).
  bool NotLeadingState() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !fence_.has_value() || lease_lost_ || shutdown_;
  }
  bool KeeperMustExit() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutdown_ || lease_lost_;
  }
  absl::StatusOr<int64_t> EnsureLease();

  EtcdClient* const client_;
  const Clock* const clock_;
  const ElectionOptions options_;

  mutable absl::Mutex mu_;
  CallCanceller* campaign_canceller_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t lease_id_ ABSL_GUARDED_BY(mu_) = 0;  // 0: none
  LeaseTimer timer_ ABSL_GUARDED_BY(mu_);
  std::optional<Fence> fence_ ABSL_GUARDED_BY(mu_);
  // The lease expired, was revoked, or its renewals lapsed past the step-down: the
  // keeper ends, and the next Campaign grants a new lease.
  bool lease_lost_ ABSL_GUARDED_BY(mu_) = true;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread keeper_;  // touched only by Campaign's thread and the destructor
};

}  // namespace weft::store::etcd

#endif  // WEFT_STORE_ETCD_LEADER_ELECTION_H_
