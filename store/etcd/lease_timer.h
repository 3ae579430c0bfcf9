// LeaseTimer: when a leader must renew its etcd lease and when it must stop acting as
// leader, on the local Clock, from the lease's TTL and the last renewal that succeeded.
//
// etcd restarts a lease's countdown when it receives a keepalive, which is after the
// leader sent it, so `sent + ttl` is the earliest the lease can expire. The leader
// steps down a margin before that: `sent + ttl - margin`, margin = ttl / 4, so a
// leader that cannot renew (etcd unreachable, process starved) stops acting while its
// key, and so its fence, still stand. Renewals go every ttl / 3 (two may fail before
// the step-down); after a failed one, the next is tried ttl / 10 later.
// Pure logic, no thread-safety of its own (LeaderElection guards it).
#ifndef WEFT_STORE_ETCD_LEASE_TIMER_H_
#define WEFT_STORE_ETCD_LEASE_TIMER_H_

#include "absl/time/time.h"

namespace weft::store::etcd {

class LeaseTimer {
 public:
  // `ttl`: the TTL the lease was granted with.
  explicit LeaseTimer(absl::Duration ttl) : ttl_(ttl) {}

  // A renewal (or the grant) sent at `sent_at` succeeded; etcd restarted the lease at
  // `granted_ttl`.
  void Renewed(absl::Time sent_at, absl::Duration granted_ttl) {
    last_renewal_sent_ = sent_at;
    ttl_ = granted_ttl;
    next_attempt_ = sent_at + ttl_ / 3;
  }
  // A renewal attempted at `now` failed.
  void RenewalFailed(absl::Time now) { next_attempt_ = now + ttl_ / 10; }

  absl::Duration ttl() const { return ttl_; }
  absl::Duration margin() const { return ttl_ / 4; }
  absl::Time last_renewal_sent() const { return last_renewal_sent_; }
  // The earliest the lease can expire in etcd.
  absl::Time EarliestExpiry() const { return last_renewal_sent_ + ttl_; }
  // From this instant on the holder must not act as leader.
  absl::Time StepDownAt() const { return EarliestExpiry() - margin(); }
  absl::Time NextRenewalAt() const { return next_attempt_; }
  bool Safe(absl::Time now) const { return now < StepDownAt(); }

 private:
  absl::Duration ttl_;
  absl::Time last_renewal_sent_ = absl::InfinitePast();
  absl::Time next_attempt_ = absl::InfinitePast();
};

}  // namespace weft::store::etcd

#endif  // WEFT_STORE_ETCD_LEASE_TIMER_H_
