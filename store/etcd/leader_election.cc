#include "store/etcd/leader_election.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace weft::store::etcd {
namespace {

std::string LeaderValue(const ElectionOptions& options) {
  return absl::StrCat(options.candidate, "\n", options.address);
}

}  // namespace

absl::StatusOr<LeaderInfo> CurrentLeader(EtcdClient& client, const std::string& election) {
  ASSIGN_OR_RETURN(mvccpb::KeyValue kv, client.Leader(election));
  LeaderInfo info;
  std::vector<std::string> parts = absl::StrSplit(kv.value(), absl::MaxSplits('\n', 1));
  info.candidate = parts[0];
  if (parts.size() > 1) info.address = parts[1];
  info.key = kv.key();
  info.epoch = kv.create_revision();
  return info;
}

absl::StatusOr<etcdserverpb::TxnResponse> GuardedTxn(
    EtcdClient& client, const Fence& fence, std::vector<etcdserverpb::Compare> compares,
    std::vector<etcdserverpb::RequestOp> success) {
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* guard = txn.add_compare();
  guard->set_key(fence.key);
  guard->set_target(etcdserverpb::Compare::CREATE);
  guard->set_result(etcdserverpb::Compare::EQUAL);
  guard->set_create_revision(fence.epoch);
  for (auto& c : compares) *txn.add_compare() = std::move(c);
  for (auto& op : success) *txn.add_success() = std::move(op);
  // On failure, read the leader key back to tell "deposed" from the caller's compares.
  txn.add_failure()->mutable_request_range()->set_key(fence.key);
  ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, client.Txn(txn));
  if (response.succeeded()) return response;
  const etcdserverpb::RangeResponse& now = response.responses(0).response_range();
  if (now.kvs_size() == 0 || now.kvs(0).create_revision() != fence.epoch) {
    const std::string holder =
        now.kvs_size() == 0 ? std::string("it no longer exists (lease expired or revoked)")
                            : absl::StrCat("it was created again at revision ",
                                           now.kvs(0).create_revision());
    return absl::FailedPreconditionError(absl::StrCat(
        "deposed: leader key ", fence.key, " of epoch ", fence.epoch, " does not stand: ",
        holder, "; nothing was written (etcd revision ", response.header().revision(), ")"));
  }
  return absl::AbortedError(absl::StrCat(
      "guarded write at epoch ", fence.epoch,
      ": one of its own compares failed; nothing was written (etcd revision ",
      response.header().revision(), ")"));
}

LeaderElection::LeaderElection(EtcdClient* client, const Clock* clock, ElectionOptions options)
    : client_(client), clock_(clock), options_(std::move(options)), timer_(options_.lease_ttl) {}

LeaderElection::~LeaderElection() {
  Stop();
  if (keeper_.joinable()) keeper_.join();
}

absl::Status LeaderElection::Validate(const ElectionOptions& options) {
  if (options.election.empty()) {
    return absl::InvalidArgumentError("election: the election prefix must not be empty");
  }
  if (options.candidate.empty() || options.candidate.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "election: candidate name '", options.candidate, "' must be non-empty, one line"));
  }
  if (options.lease_ttl < absl::Seconds(1) || options.lease_ttl > absl::Seconds(3600) ||
      options.lease_ttl != absl::Seconds(absl::ToInt64Seconds(options.lease_ttl))) {
    return absl::InvalidArgumentError(
        absl::StrCat("election: lease_ttl ", absl::FormatDuration(options.lease_ttl),
                     " must be whole seconds in 1s..3600s"));
  }
  return absl::OkStatus();
}

void LeaderElection::Stop() {
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
    if (campaign_canceller_ != nullptr) campaign_canceller_->Cancel();
  }
  // The keeper sees shutdown_ and ends; the destructor joins it (keeper_ belongs to
  // Campaign's thread, which may be running now).
}

void LeaderElection::LoseLocked(const std::string& why) {
  if (fence_.has_value()) {
    WEFT_LOG(WARNING) << "etcd leadership lost election=" << options_.election
                      << " epoch=" << fence_->epoch << " reason=\"" << why << "\"";
  }
  fence_.reset();
  lease_lost_ = true;
}

bool LeaderElection::LeadingLocked() const {
  return !NotLeadingState() && timer_.Safe(clock_->Now());
}

bool LeaderElection::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return LeadingLocked();
}

std::optional<Fence> LeaderElection::fence() const {
  absl::MutexLock lock(&mu_);
  if (!LeadingLocked()) return std::nullopt;
  return fence_;
}

LeaseTimer LeaderElection::timer() const {
  absl::MutexLock lock(&mu_);
  return timer_;
}

bool LeaderElection::AwaitLoss(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (!LeadingLocked()) return true;
    if (clock_->Now() >= deadline) return false;
    clock_->AwaitWithDeadline(&mu_, absl::Condition(this, &LeaderElection::NotLeadingState),
                              std::min(deadline, timer_.StepDownAt()));
  }
}

absl::StatusOr<int64_t> LeaderElection::EnsureLease() {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::CancelledError("election: stopped");
    if (!lease_lost_) return lease_id_;
  }
  // The previous keeper (if any) ended when its lease was lost.
  if (keeper_.joinable()) keeper_.join();
  const absl::Time sent = clock_->Now();
  ASSIGN_OR_RETURN(etcdserverpb::LeaseGrantResponse granted,
                   client_->LeaseGrant(absl::ToInt64Seconds(options_.lease_ttl)));
  absl::MutexLock lock(&mu_);
  lease_id_ = granted.id();
  timer_ = LeaseTimer(absl::Seconds(granted.ttl()));
  timer_.Renewed(sent, absl::Seconds(granted.ttl()));
  lease_lost_ = false;
  keeper_ = std::thread([this] { KeepAliveLoop(); });
  return lease_id_;
}

void LeaderElection::KeepAliveLoop() {
  absl::MutexLock lock(&mu_);
  while (!KeeperMustExit()) {
    const absl::Time wake = std::min(timer_.NextRenewalAt(), timer_.StepDownAt());
    clock_->AwaitWithDeadline(&mu_, absl::Condition(this, &LeaderElection::KeeperMustExit),
                              wake);
    if (KeeperMustExit()) break;
    const absl::Time now = clock_->Now();
    if (!timer_.Safe(now)) {
      LoseLocked(absl::StrCat("no lease renewal succeeded since ",
                              absl::FormatTime(timer_.last_renewal_sent()), "; stepped down ",
                              absl::FormatDuration(timer_.margin()),
                              " before the lease could expire"));
      const int64_t lease = lease_id_;
      mu_.Unlock();
      client_->LeaseRevoke(lease).IgnoreError();  // frees the key if etcd is reachable
      mu_.Lock();
      break;
    }
    if (now < timer_.NextRenewalAt()) continue;
    const int64_t lease = lease_id_;
    mu_.Unlock();
    absl::StatusOr<int64_t> ttl_s = client_->LeaseKeepAliveOnce(lease);
    mu_.Lock();
    if (KeeperMustExit()) break;
    if (!timer_.Safe(clock_->Now())) {
      // The step-down time passed while the renewal was under way: IsLeader() has said
      // false, so leadership ends here even if etcd renewed the lease after all.
      // Revoking frees the key for the next candidate at once when etcd is reachable.
      LoseLocked("the lease renewal came back after the step-down time");
      mu_.Unlock();
      client_->LeaseRevoke(lease).IgnoreError();
      mu_.Lock();
      break;
    }
    if (ttl_s.ok()) {
      timer_.Renewed(now, absl::Seconds(*ttl_s));
    } else if (absl::IsNotFound(ttl_s.status())) {
      LoseLocked(std::string(ttl_s.status().message()));
    } else {
      WEFT_LOG(WARNING) << "etcd lease renewal failed lease=" << absl::StrCat(absl::Hex(lease))
                        << " step_down_in=" << absl::FormatDuration(timer_.StepDownAt() - clock_->Now())
                        << " error=\"" << ttl_s.status().message() << "\"";
      timer_.RenewalFailed(clock_->Now());
    }
  }
}

absl::StatusOr<Fence> LeaderElection::Campaign(absl::Duration timeout) {
  RETURN_IF_ERROR(Validate(options_));
  ASSIGN_OR_RETURN(const int64_t lease, EnsureLease());
  CallCanceller canceller;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::CancelledError("election: stopped");
    campaign_canceller_ = &canceller;
  }
  absl::StatusOr<v3electionpb::LeaderKey> won =
      client_->Campaign(options_.election, lease, LeaderValue(options_), timeout, &canceller);
  {
    absl::MutexLock lock(&mu_);
    campaign_canceller_ = nullptr;
  }
  if (!won.ok()) return won.status();
  // etcd's Campaign can report a win for a key its lease has already taken away:
  // leadership counts only while the key stands with that create revision.
  etcdserverpb::RangeRequest read;
  read.set_key(won->key());
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse now, client_->Range(read));
  absl::MutexLock lock(&mu_);
  if (now.kvs_size() == 0 || now.kvs(0).create_revision() != won->rev()) {
    LoseLocked("won key vanished");
    return absl::UnavailableError(absl::StrCat("election ", options_.election, ": key ",
                                               won->key(), " expired while campaigning; campaign again"));
  }
  if (lease_lost_ || !timer_.Safe(clock_->Now())) {
    return absl::UnavailableError(absl::StrCat(
        "election ", options_.election, ": won, but the lease could not be renewed in time; campaign again"));
  }
  fence_ = Fence{won->key(), won->rev()};
  WEFT_LOG(INFO) << "etcd leadership won election=" << options_.election
                 << " candidate=" << options_.candidate << " epoch=" << fence_->epoch
                 << " key=" << fence_->key;
  return *fence_;
}

absl::StatusOr<etcdserverpb::TxnResponse> LeaderElection::GuardedTxn(
    std::vector<etcdserverpb::Compare> compares, std::vector<etcdserverpb::RequestOp> success) {
  std::optional<Fence> held = fence();
  if (!held.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "not the leader of ", options_.election, " (stepped down or never won); nothing was written"));
  }
  return etcd::GuardedTxn(*client_, *held, std::move(compares), std::move(success));
}

absl::Status LeaderElection::Resign() {
  int64_t lease = 0;
  {
    absl::MutexLock lock(&mu_);
    if (lease_lost_) return absl::OkStatus();
    lease = lease_id_;
    LoseLocked("resigned");
  }
  return client_->LeaseRevoke(lease);
}

}  // namespace weft::store::etcd
