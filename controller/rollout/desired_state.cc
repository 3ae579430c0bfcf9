#include "controller/rollout/desired_state.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"

namespace weft::controller {

DesiredStateManager::DesiredStateManager(const Clock* clock, RolloutMetrics* metrics,
                                         Sender sender, absl::Duration drift_resend_interval)
    : clock_(clock),
      metrics_(metrics),
      sender_(std::move(sender)),
      drift_resend_interval_(drift_resend_interval),
      // Nonces of two controller runs must not collide: an ACK to the previous run's
      // push must not match this run's.
      nonce_salt_(absl::Uniform<uint64_t>(absl::BitGen())) {}

void DesiredStateManager::SetStatusLocked(Entry& entry, SyncStatus status) {
  --counts_[static_cast<int>(entry.sync.status)];
  metrics_->SetSyncCount(entry.sync.status, counts_[static_cast<int>(entry.sync.status)]);
  entry.sync.status = status;
  ++counts_[static_cast<int>(status)];
  metrics_->SetSyncCount(status, counts_[static_cast<int>(status)]);
}

void DesiredStateManager::SetReportsDriftLocked(Entry& entry, bool drift) {
  if (entry.reports_drift == drift) return;
  entry.reports_drift = drift;
  drift_nodes_ += drift ? 1 : -1;
  metrics_->SetDriftNodes(drift_nodes_);
}

void DesiredStateManager::AddLocked(const std::string& node, Entry entry) {
  const SyncStatus status = entry.sync.status;
  nodes_[node] = std::move(entry);
  ++counts_[static_cast<int>(status)];
  metrics_->SetSyncCount(status, counts_[static_cast<int>(status)]);
}

void DesiredStateManager::SendLocked(const std::string& node, Entry& entry) {
  entry.sync.desired.set_nonce(
      absl::StrFormat("%016x-%d", nonce_salt_, ++nonce_counter_));
  if (!sender_) return;
  weft::v1::ControllerMessage message;
  *message.mutable_desired_state() = entry.sync.desired;
  absl::Status sent = sender_(node, std::move(message));
  if (sent.ok()) {
    entry.sync.sent_at = clock_->Now();
    WEFT_LOG(INFO) << "desired state sent node=" << node
                   << " version=" << entry.sync.desired.version()
                   << " nonce=" << entry.sync.desired.nonce();
  } else {
    WEFT_LOG(DEBUG) << "desired state waits for the agent node=" << node
                    << " version=" << entry.sync.desired.version() << " reason=\""
                    << sent.message() << "\"";
  }
}

absl::Status DesiredStateManager::SetDesired(weft::v1::DesiredState state) {
  if (state.node_name().empty() || state.version() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "desired state needs a node name and a version >= 1 (got node '", state.node_name(),
        "', version ", state.version(), ")"));
  }
  const std::string node = state.node_name();
  absl::MutexLock lock(&mu_);
  if (state.version() > newest_version_) {
    newest_version_ = state.version();
    metrics_->SetDesiredVersion(newest_version_);
  }
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    AddLocked(node, Entry());
    it = nodes_.find(node);
  }
  Entry& entry = it->second;
  if (entry.sync.desired.version() != state.version()) entry.sync.desired_since = clock_->Now();
  entry.sync.desired = std::move(state);
  entry.sync.nack_errors.clear();
  entry.sync.nacked_version = 0;
  SetStatusLocked(entry, SyncStatus::kPending);
  SendLocked(node, entry);
  return absl::OkStatus();
}

bool DesiredStateManager::Adopt(weft::v1::DesiredState state, uint64_t last_good_version) {
  const std::string node = state.node_name();
  absl::MutexLock lock(&mu_);
  if (nodes_.find(node) != nodes_.end()) return false;
  if (state.version() > newest_version_) {
    newest_version_ = state.version();
    metrics_->SetDesiredVersion(newest_version_);
  }
  Entry entry;
  entry.sync.desired = std::move(state);
  entry.sync.last_good_version = last_good_version;
  entry.sync.desired_since = clock_->Now();
  auto reported = unadopted_applied_.find(node);
  if (reported != unadopted_applied_.end()) {
    entry.sync.applied_version = reported->second;
    unadopted_applied_.erase(reported);
  }
  const bool applied = entry.sync.applied_version == entry.sync.desired.version();
  entry.sync.status = applied ? SyncStatus::kInSync : SyncStatus::kPending;
  AddLocked(node, std::move(entry));
  if (!applied) SendLocked(node, nodes_.find(node)->second);
  return true;
}

void DesiredStateManager::MarkGood(const std::string& node, uint64_t version) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end()) it->second.sync.last_good_version = version;
}

void DesiredStateManager::OnStreamAttached(const std::string& node, uint64_t applied_version) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    unadopted_applied_[node] = applied_version;
    return;
  }
  Entry& entry = it->second;
  entry.sync.applied_version = applied_version;
  if (applied_version == entry.sync.desired.version()) {
    if (entry.sync.status == SyncStatus::kPending) SetStatusLocked(entry, SyncStatus::kInSync);
    return;
  }
  // A version it NACKed is not pushed again on every reconnect; a new desired
  // version or an operator's rollout changes it.
  if (entry.sync.status == SyncStatus::kNacked) return;
  if (entry.sync.status != SyncStatus::kPending) SetStatusLocked(entry, SyncStatus::kPending);
  SendLocked(node, entry);
}

void DesiredStateManager::OnDesiredStateAck(const std::string& node,
                                            const weft::v1::DesiredStateAck& ack) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  Entry& entry = it->second;
  if (ack.version() != entry.sync.desired.version() ||
      ack.nonce() != entry.sync.desired.nonce()) {
    WEFT_LOG(INFO) << "stale desired state answer ignored node=" << node
                   << " version=" << ack.version() << " nonce=" << ack.nonce()
                   << " desired_version=" << entry.sync.desired.version()
                   << " desired_nonce=" << entry.sync.desired.nonce();
    return;
  }
  if (ack.accepted()) {
    entry.sync.applied_version = ack.version();
    entry.sync.drift.clear();
    SetReportsDriftLocked(entry, false);
    SetStatusLocked(entry, SyncStatus::kInSync);
  } else {
    entry.sync.nacked_version = ack.version();
    entry.sync.nack_errors.assign(ack.errors().begin(), ack.errors().end());
    SetStatusLocked(entry, SyncStatus::kNacked);
  }
}

void DesiredStateManager::OnTunablesStatus(const std::string& node,
                                           const weft::v1::TunablesStatus& status) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    unadopted_applied_[node] = status.applied_version();
    return;
  }
  Entry& entry = it->second;
  entry.sync.applied_version = status.applied_version();
  const bool drift = !status.drift().empty();
  SetReportsDriftLocked(entry, drift);
  if (!drift) {
    entry.sync.drift.clear();
    const bool applied = status.applied_version() == entry.sync.desired.version();
    if (entry.sync.status == SyncStatus::kDrifted) {
      SetStatusLocked(entry, applied ? SyncStatus::kInSync : SyncStatus::kPending);
    } else if (entry.sync.status == SyncStatus::kPending && applied) {
      // The ACK was lost (e.g. the stream broke right after the apply).
      SetStatusLocked(entry, SyncStatus::kInSync);
    }
    return;
  }
  entry.sync.drift.assign(status.drift().begin(), status.drift().end());
  // Drift of an older version is the pending push's to fix; a NACKed node keeps NACKed.
  if (status.applied_version() != entry.sync.desired.version() ||
      entry.sync.status == SyncStatus::kNacked) {
    return;
  }
  if (entry.sync.status != SyncStatus::kDrifted) {
    SetStatusLocked(entry, SyncStatus::kDrifted);
    const weft::v1::TunableDrift& first = status.drift(0);
    WEFT_LOG(WARNING) << "tunables drifted node=" << node << " version="
                      << status.applied_version() << " drifted=" << status.drift_size()
                      << " first=\"" << first.device() << " " << first.parameter()
                      << " expected " << first.expected() << " actual " << first.actual()
                      << "\"";
  }
  const absl::Time now = clock_->Now();
  if (now - entry.drift_resent_at >= drift_resend_interval_) {
    entry.drift_resent_at = now;
    SendLocked(node, entry);
  }
}

std::optional<uint64_t> DesiredStateManager::UnadoptedApplied(const std::string& node) const {
  absl::MutexLock lock(&mu_);
  auto it = unadopted_applied_.find(node);
  if (it == unadopted_applied_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeSync> DesiredStateManager::Get(const std::string& node) const {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return std::nullopt;
  return it->second.sync;
}

std::map<std::string, NodeSync> DesiredStateManager::All() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, NodeSync> out;
  for (const auto& [name, entry] : nodes_) out.emplace(name, entry.sync);
  return out;
}

uint64_t DesiredStateManager::newest_version() const {
  absl::MutexLock lock(&mu_);
  return newest_version_;
}

}  // namespace weft::controller
