#include "controller/inventory.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace weft::controller {
namespace {

using weft::v1::NodeState;

constexpr absl::string_view kNoReasonGiven = "no reason given";

std::string NicKey(absl::string_view device, uint32_t port) {
  return absl::StrCat(device, "/", port);
}

}  // namespace

InventoryOptions InventoryOptions::FromConfig(const weft::v1::ControllerConfig& config) {
  InventoryOptions options;
  options.telemetry_interval = absl::Milliseconds(config.telemetry_interval_ms());
  options.down_after_intervals = static_cast<int>(config.down_after_intervals());
  options.window_samples = static_cast<int>(config.window_samples());
  return options;
}

std::string NodeStateName(NodeState state) {
  std::string name = weft::v1::NodeState_Name(state);
  constexpr absl::string_view kPrefix = "NODE_STATE_";
  if (absl::string_view(name).substr(0, kPrefix.size()) == kPrefix) {
    name.erase(0, kPrefix.size());
  }
  return name;
}

absl::Status SupersededError(absl::string_view node, uint64_t old_epoch,
                             uint64_t new_epoch) {
  return absl::AbortedError(absl::StrCat("session ", old_epoch, " of node ", node,
                                         " was superseded by session ", new_epoch));
}

absl::string_view SessionRejectReason(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return "unknown_node";
    case absl::StatusCode::kAborted:
      return "superseded";
    case absl::StatusCode::kInvalidArgument:
      return "ungranted_session";
    default:
      return "other";
  }
}

Inventory::Inventory(const Clock* clock, InventoryOptions options,
                     ControllerMetrics* metrics)
    : clock_(clock),
      options_(options),
      down_after_(options.telemetry_interval * options.down_after_intervals),
      metrics_(metrics) {}

NodeState Inventory::StateOf(const Node& node) {
  if (node.drained) return weft::v1::NODE_STATE_DRAINED;
  return node.reporting ? weft::v1::NODE_STATE_HEALTHY : weft::v1::NODE_STATE_DOWN;
}

void Inventory::AddToStateCount(NodeState state, int64_t delta) {
  const int index = static_cast<int>(state);
  if (index < 0 || index >= static_cast<int>(state_counts_.size())) return;
  state_counts_[index] += delta;
  metrics_->SetNodeCount(state, state_counts_[index]);
}

std::optional<StateChange> Inventory::NoteStateChange(const std::string& name,
                                                      NodeState before, const Node& node,
                                                      absl::string_view reason) {
  const NodeState after = StateOf(node);
  if (after == before) return std::nullopt;
  AddToStateCount(before, -1);
  AddToStateCount(after, +1);
  metrics_->NodeStateChanged(after);
  WEFT_LOG(INFO) << "node state changed node=" << name << " from=" << NodeStateName(before)
                 << " to=" << NodeStateName(after) << " reason=\"" << reason << "\"";
  return StateChange{name, before, after, std::string(reason)};
}

absl::StatusOr<Registration> Inventory::Register(const weft::v1::NodeInfo& info,
                                                 uint64_t last_session_epoch) {
  if (info.name().empty()) {
    return absl::InvalidArgumentError(
        "Register: the node name is empty; set node_name in the agent's config");
  }
  if (info.nics().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: node ", info.name(),
        " reports no RDMA NICs; Weft needs at least one RoCE NIC per node (check that the "
        "agent sees devices under /sys/class/infiniband)"));
  }
  absl::flat_hash_set<std::string> seen_nics;
  for (const weft::v1::Nic& nic : info.nics()) {
    if (nic.device().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Register: node ", info.name(), " reports a NIC without a device name (netdev '",
          nic.netdev(), "', PCI ", nic.pci_address(), ")"));
    }
    if (!seen_nics.insert(NicKey(nic.device(), nic.port())).second) {
      return absl::InvalidArgumentError(absl::StrCat("Register: node ", info.name(),
                                                     " reports NIC ", nic.device(),
                                                     " port ", nic.port(), " twice"));
    }
  }
  if (last_session_epoch == std::numeric_limits<uint64_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Register: node ", info.name(), " sent last_session_epoch ",
                     last_session_epoch, ", which leaves no higher epoch to grant"));
  }

  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  if (auto existing = nodes_.find(info.name());
      existing != nodes_.end() &&
      existing->second.epoch == std::numeric_limits<uint64_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: node ", info.name(), " has used every session epoch"));
  }
  auto [it, inserted] = nodes_.try_emplace(info.name());
  Node& node = it->second;
  const NodeState before = inserted ? NodeState::NODE_STATE_UNSPECIFIED : StateOf(node);
  Registration registration;
  registration.fenced_epoch = node.epoch;  // 0 for a new node
  registration.session_epoch = std::max(node.epoch, last_session_epoch) + 1;

  // Keep the windows of NICs the node still has: a reconnect should not blank rates.
  std::vector<NicState> nics;
  nics.reserve(info.nics_size());
  for (const weft::v1::Nic& nic : info.nics()) {
    NicState state;
    for (NicState& old : node.nics) {
      if (old.nic.device() == nic.device() && old.nic.port() == nic.port()) {
        state = std::move(old);
        break;
      }
    }
    state.nic = nic;
    nics.push_back(std::move(state));
  }
  node.nics = std::move(nics);
  node.info = info;
  node.epoch = registration.session_epoch;
  node.registered_at = now;
  node.last_seen = now;
  node.reporting = true;

  metrics_->RegistrationAccepted();
  if (inserted) {
    AddToStateCount(StateOf(node), +1);
    WEFT_LOG(INFO) << "registered node=" << info.name() << " epoch="
                   << registration.session_epoch << " rack=" << info.rack()
                   << " pod=" << info.pod() << " nics=" << info.nics_size()
                   << " gpus=" << info.gpus_size();
  } else {
    WEFT_LOG(INFO) << "re-registered node=" << info.name() << " epoch="
                   << registration.session_epoch << " rack=" << info.rack()
                   << " pod=" << info.pod() << " nics=" << info.nics_size()
                   << " gpus=" << info.gpus_size();
    NoteStateChange(info.name(), before, node, "registered again");
  }
  if (registration.fenced_epoch != 0) {
    metrics_->SessionFenced();
    WEFT_LOG(WARNING) << "fenced session node=" << info.name()
                      << " old_epoch=" << registration.fenced_epoch
                      << " new_epoch=" << registration.session_epoch;
  }
  return registration;
}

absl::Status Inventory::CheckSessionLocked(absl::string_view name, uint64_t epoch) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", name,
                     " is not registered with this controller (it may have restarted); "
                     "the agent must call Register and open a new stream"));
  }
  const uint64_t current = it->second.epoch;
  if (epoch < current) {
    return SupersededError(name, epoch, current);
  }
  if (epoch > current) {
    return absl::InvalidArgumentError(
        absl::StrCat("session ", epoch, " of node ", name,
                     " was never granted (the current session is ", current,
                     "); the agent must call Register and use the epoch it returns"));
  }
  return absl::OkStatus();
}

absl::Status Inventory::CheckSession(absl::string_view node, uint64_t epoch) const {
  absl::ReaderMutexLock lock(&mu_);
  return CheckSessionLocked(node, epoch);
}

absl::Status Inventory::AcceptTelemetry(absl::string_view name, uint64_t epoch,
                                        const weft::v1::TelemetryBatch& batch) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  if (absl::Status status = CheckSessionLocked(name, epoch); !status.ok()) {
    metrics_->TelemetryRejected(SessionRejectReason(status));
    return status;
  }
  auto it = nodes_.find(name);
  Node& node = it->second;
  int64_t accepted = 0;
  int64_t dropped = 0;
  for (const weft::v1::NicSample& sample : batch.samples()) {
    auto nic = std::find_if(node.nics.begin(), node.nics.end(), [&](const NicState& n) {
      return n.nic.device() == sample.device() && n.nic.port() == sample.port();
    });
    if (nic == node.nics.end()) {
      ++dropped;
      WEFT_LOG(DEBUG) << "dropped sample node=" << name << " nic=" << sample.device()
                      << " port=" << sample.port() << " reason=\"NIC not registered\"";
      continue;
    }
    WindowSample entry;
    entry.received_at = now;
    entry.timestamp_us = sample.timestamp_us();
    entry.rates_valid = sample.rates_valid();
    entry.has_error = !sample.error().empty();
    entry.rates = RatesFromSample(sample);
    nic->window.push_back(entry);
    while (nic->window.size() > static_cast<size_t>(options_.window_samples)) {
      nic->window.pop_front();
    }
    nic->latest = sample;
    nic->has_latest = true;
    ++accepted;
  }
  if (dropped > 0) metrics_->SamplesDropped("unknown_nic", dropped);
  metrics_->TelemetryAccepted(accepted);

  node.last_seen = now;
  if (!node.reporting) {
    const NodeState before = StateOf(node);
    node.reporting = true;
    if (!NoteStateChange(it->first, before, node, "telemetry resumed")) {
      WEFT_LOG(INFO) << "node reporting again node=" << name
                     << " state=" << NodeStateName(StateOf(node));
    }
  }
  return absl::OkStatus();
}

std::vector<StateChange> Inventory::EvaluateLiveness() {
  const absl::Time now = clock_->Now();
  std::vector<StateChange> changes;
  absl::MutexLock lock(&mu_);
  for (auto& [name, node] : nodes_) {
    if (!node.reporting) continue;
    const absl::Duration silence = now - node.last_seen;
    if (silence <= down_after_) continue;
    const NodeState before = StateOf(node);
    node.reporting = false;
    const std::string reason = absl::StrCat(
        "no telemetry for ", absl::FormatDuration(absl::Trunc(silence, absl::Milliseconds(1))));
    if (auto change = NoteStateChange(name, before, node, reason)) {
      changes.push_back(*std::move(change));
    } else {
      WEFT_LOG(INFO) << "node stopped reporting node=" << name
                     << " state=" << NodeStateName(StateOf(node)) << " reason=\"" << reason
                     << "\"";
    }
  }
  return changes;
}

absl::StatusOr<weft::v1::NodeStatus> Inventory::Drain(absl::string_view name,
                                                      absl::string_view reason) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", name, " is not registered"));
  }
  Node& node = it->second;
  const std::string stored_reason(reason.empty() ? kNoReasonGiven : reason);
  if (node.drained) {
    node.drain_reason = stored_reason;
    WEFT_LOG(INFO) << "drain reason updated node=" << name << " reason=\"" << stored_reason
                   << "\"";
    return StatusOf(node);
  }
  const NodeState before = StateOf(node);
  node.drained = true;
  node.drain_reason = stored_reason;
  metrics_->NodeDrained();
  NoteStateChange(it->first, before, node, absl::StrCat("drained: ", stored_reason));
  return StatusOf(node);
}

absl::StatusOr<weft::v1::NodeStatus> Inventory::Undrain(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", name, " is not registered"));
  }
  Node& node = it->second;
  if (!node.drained) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", name, " is not drained (state ",
                     NodeStateName(StateOf(node)), "); nothing to undrain"));
  }
  const NodeState before = StateOf(node);
  node.drained = false;
  node.drain_reason.clear();
  NoteStateChange(it->first, before, node, "undrained");
  return StatusOf(node);
}

weft::v1::NodeStatus Inventory::StatusOf(const Node& node) const {
  weft::v1::NodeStatus status;
  *status.mutable_info() = node.info;
  status.set_state(StateOf(node));
  status.set_reporting(node.reporting);
  status.set_drain_reason(node.drain_reason);
  status.set_last_seen_us(absl::ToUnixMicros(node.last_seen));
  status.set_registered_at_us(absl::ToUnixMicros(node.registered_at));
  status.set_session_epoch(node.epoch);
  NicRates total;
  for (const NicState& nic : node.nics) {
    weft::v1::NicStatus* nic_status = status.add_nics();
    *nic_status->mutable_nic() = nic.nic;
    if (nic.has_latest) *nic_status->mutable_latest() = nic.latest;
    if (!nic.window.empty()) total += nic.window.back().rates;
  }
  // A silent node's last rates describe the past; report nothing rather than stale.
  *status.mutable_rates() = ToProto(node.reporting ? total : NicRates{});
  return status;
}

absl::StatusOr<weft::v1::NodeStatus> Inventory::GetNode(absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", name, " is not registered"));
  }
  return StatusOf(it->second);
}

std::vector<weft::v1::NodeStatus> Inventory::ListNodes(absl::string_view rack) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<weft::v1::NodeStatus> result;
  result.reserve(nodes_.size());
  for (const auto& [name, node] : nodes_) {
    if (!rack.empty() && node.info.rack() != rack) continue;
    result.push_back(StatusOf(node));
  }
  return result;
}

absl::StatusOr<std::vector<WindowSample>> Inventory::NicWindow(absl::string_view name,
                                                               absl::string_view device,
                                                               uint32_t port) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", name, " is not registered"));
  }
  for (const NicState& nic : it->second.nics) {
    if (nic.nic.device() == device && nic.nic.port() == port) {
      return std::vector<WindowSample>(nic.window.begin(), nic.window.end());
    }
  }
  return absl::NotFoundError(
      absl::StrCat("node ", name, " has no NIC ", device, " port ", port));
}

}  // namespace weft::controller
