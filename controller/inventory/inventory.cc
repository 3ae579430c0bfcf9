#include "controller/inventory/inventory.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "controller/health/rack_summary.h"

namespace weft::controller {
namespace {

using weft::v1::NodeState;

constexpr absl::string_view kNoReasonGiven = "no reason given";

// How many nodes ahead the sweep asks the CPU to fetch.
constexpr size_t kPrefetchAhead = 8;

std::string NicKey(absl::string_view device, uint32_t port) {
  return absl::StrCat(device, "/", port);
}

weft::v1::Event MakeEvent(weft::v1::EventKind kind, absl::string_view node, absl::Time now,
                          std::string message) {
  weft::v1::Event event;
  event.set_time_us(absl::ToUnixMicros(now));
  event.set_node(std::string(node));
  event.set_kind(kind);
  event.set_message(std::move(message));
  return event;
}

std::string Rounded(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1)));
}

}  // namespace

InventoryOptions InventoryOptions::FromConfig(const weft::v1::ControllerConfig& config) {
  InventoryOptions options;
  options.telemetry_interval = absl::Milliseconds(config.telemetry_interval_ms());
  options.down_after_intervals = static_cast<int>(config.down_after_intervals());
  options.window_samples = static_cast<int>(config.window_samples());
  if (config.has_health()) {
    options.health = HealthThresholds::FromConfig(config.health());
    options.health_timings = HealthTimings::FromConfig(config.health());
    if (config.health().has_auto_drain()) {
      options.auto_drain = AutoDrainPolicy::FromConfig(config.health().auto_drain());
    }
  }
  if (config.event_log_capacity() > 0) {
    options.event_log_capacity = config.event_log_capacity();
  }
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
                     ControllerMetrics* metrics, store::ControllerStore* store)
    : clock_(clock),
      options_(options),
      down_after_(options.telemetry_interval * options.down_after_intervals),
      metrics_(metrics),
      store_(store),
      events_(options.event_log_capacity, store) {}

absl::Status Inventory::Restore() {
  if (store_ == nullptr) return absl::OkStatus();
  absl::StatusOr<std::vector<store::StoredNode>> stored = store_->LoadNodes();
  if (!stored.ok()) return stored.status();
  // Reserve the next epoch block of every node before granting any epoch.
  for (store::StoredNode& node : *stored) node.epoch_ceiling += kEpochBlock;
  if (absl::Status raised = store_->PutNodes(*stored); !raised.ok()) return raised;
  if (absl::Status events = events_.Restore(); !events.ok()) return events;

  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  for (store::StoredNode& stored_node : *stored) {
    Node& node = nodes_[stored_node.name];
    node.health = HealthTracker(options_.health_timings);
    node.sick_or_clean_since = now;
    // Not heard from since the restart: DOWN until its agent registers again.
    node.reporting = false;
    node.last_seen = absl::UnixEpoch();
    node.registered_at = absl::UnixEpoch();
    node.pod = stored_node.pod;
    node.rack = stored_node.rack;
    node.info = std::move(stored_node.info);
    for (const weft::v1::Nic& nic : node.info.nics()) node.nics.push_back(NicState{nic});
    // Epochs up to the old ceiling may have been granted; none above it.
    node.epoch = stored_node.epoch_ceiling - kEpochBlock;
    node.epoch_ceiling = stored_node.epoch_ceiling;
    node.drained = stored_node.drained;
    node.drained_by = stored_node.drained_by;
    node.drain_reason = std::move(stored_node.drain_reason);
    node.drained_who = std::move(stored_node.drained_who);
    Summarize(node);
    AddToStateCount(StateOf(node), +1);
  }
  sweep_order_stale_ = true;
  WEFT_LOG(INFO) << "restored nodes=" << stored->size() << " events=" << events_.size();
  return absl::OkStatus();
}

store::StoredNode Inventory::ToStored(const std::string& name, const Node& node) {
  store::StoredNode stored;
  stored.name = name;
  stored.rack = node.rack;
  stored.pod = node.pod;
  stored.info = node.info;
  stored.epoch_ceiling = node.epoch_ceiling;
  stored.drained = node.drained;
  stored.drained_by = node.drained_by;
  stored.drain_reason = node.drain_reason;
  stored.drained_who = node.drained_who;
  return stored;
}

absl::Status Inventory::Persist(const store::StoredNode& stored) {
  if (store_ == nullptr) return absl::OkStatus();
  absl::Status status = store_->PutNode(stored);
  if (!status.ok()) {
    WEFT_LOG(ERROR) << "cannot persist node node=" << stored.name << " error=\""
                    << status.message() << "\"";
  }
  return status;
}

NodeState Inventory::StateOf(const Node& node) {
  if (node.drained) return weft::v1::NODE_STATE_DRAINED;
  if (!node.reporting) return weft::v1::NODE_STATE_DOWN;
  return node.health.state();
}

NicRates Inventory::RatesOf(const Node& node) {
  // A silent node's last rates describe the past; report nothing rather than stale.
  if (!node.reporting) return NicRates();
  return node.latest_rates;
}

const std::vector<Inventory::NodeRef>& Inventory::SweepOrder() {
  if (sweep_order_stale_) {
    sweep_order_.clear();
    sweep_order_.reserve(nodes_.size());
    for (auto& [name, node] : nodes_) sweep_order_.emplace_back(&name, &node);
    sweep_order_stale_ = false;
  }
  return sweep_order_;
}

void Inventory::Summarize(Node& node) {
  node.latest_rates = NicRates();
  node.findings = 0;
  for (const NicState& nic : node.nics) {
    if (!nic.window.empty()) node.latest_rates += nic.window.back().rates;
    node.findings += static_cast<int>(nic.findings.size());
  }
  for (const auto& [source, findings] : node.external_findings) {
    node.findings += static_cast<int>(findings.size());
  }
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
  std::optional<StateChange> change = CountStateChange(name, before, node, reason);
  if (change.has_value()) {
    weft::v1::Event event = MakeEvent(weft::v1::EVENT_KIND_STATE_CHANGED, name,
                                      clock_->Now(), std::string(reason));
    event.set_from_state(change->from);
    event.set_to_state(change->to);
    events_.Append(std::move(event));
  }
  return change;
}

std::optional<StateChange> Inventory::CountStateChange(const std::string& name,
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
  auto existing = nodes_.find(info.name());
  if (existing != nodes_.end() &&
      existing->second.epoch == std::numeric_limits<uint64_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: node ", info.name(), " has used every session epoch"));
  }
  // A new node, a node that moved, or an epoch at its durable ceiling is committed
  // (with the next epoch block) before the epoch is granted.
  uint64_t epoch_ceiling = 0;
  if (store_ != nullptr) {
    const Node* known = existing == nodes_.end() ? nullptr : &existing->second;
    const uint64_t epoch = std::max(known ? known->epoch : 0, last_session_epoch) + 1;
    epoch_ceiling = known ? known->epoch_ceiling : 0;
    if (known == nullptr || epoch >= known->epoch_ceiling || known->rack != info.rack() ||
        known->pod != info.pod()) {
      store::StoredNode stored = known ? ToStored(info.name(), *known) : store::StoredNode();
      stored.name = info.name();
      stored.rack = info.rack();
      stored.pod = info.pod();
      stored.info = info;
      epoch_ceiling = std::max(epoch_ceiling, epoch + kEpochBlock);
      stored.epoch_ceiling = epoch_ceiling;
      if (absl::Status persisted = Persist(stored); !persisted.ok()) return persisted;
    }
  }
  auto [it, inserted] = nodes_.try_emplace(info.name());
  Node& node = it->second;
  if (inserted) {
    sweep_order_stale_ = true;
    node.health = HealthTracker(options_.health_timings);
    node.sick_or_clean_since = now;
  }
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
  Summarize(node);
  node.info = info;
  node.pod = info.pod();
  node.rack = info.rack();
  node.epoch = registration.session_epoch;
  node.epoch_ceiling = epoch_ceiling;
  node.registered_at = now;
  node.last_seen = now;
  if (inserted || !node.reporting) node.health.Resume(now);
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
  events_.Append(MakeEvent(
      weft::v1::EVENT_KIND_REGISTERED, info.name(), now,
      absl::StrCat("session ", registration.session_epoch,
                   registration.fenced_epoch != 0
                       ? absl::StrCat(" (fenced session ", registration.fenced_epoch, ")")
                       : "",
                   ": rack ", info.rack().empty() ? "-" : info.rack(), ", pod ",
                   info.pod().empty() ? "-" : info.pod(), ", ", info.nics_size(),
                   info.nics_size() == 1 ? " NIC, " : " NICs, ", info.gpus_size(),
                   info.gpus_size() == 1 ? " GPU" : " GPUs")));
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
  return SessionStatus(name, it == nodes_.end() ? nullptr : &it->second, epoch);
}

absl::Status Inventory::SessionStatus(absl::string_view name, const Node* node,
                                      uint64_t epoch) {
  if (node == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", name,
                     " is not registered with this controller (it may have restarted); "
                     "the agent must call Register and open a new stream"));
  }
  const uint64_t current = node->epoch;
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
  // What needs no table is done before taking its lock, so that streams on other
  // threads wait less for it: each sample's window entry and its serialized form. The
  // scratch space is per thread and reused (the strings swapped out below come back
  // as the next call's buffers), so the steady state allocates nothing here.
  struct Prepared {
    NicReading reading;
    std::string serialized;
    bool serialized_ok = false;
  };
  thread_local std::vector<Prepared> prepared;
  if (prepared.size() < static_cast<size_t>(batch.samples_size())) {
    prepared.resize(batch.samples_size());
  }
  for (int i = 0; i < batch.samples_size(); ++i) {
    prepared[i].reading = ReadingFromSample(batch.samples(i), now);
    prepared[i].serialized_ok = batch.samples(i).SerializeToString(&prepared[i].serialized);
  }

  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (absl::Status status =
          SessionStatus(name, it == nodes_.end() ? nullptr : &it->second, epoch);
      !status.ok()) {
    metrics_->TelemetryRejected(SessionRejectReason(status));
    return status;
  }
  Node& node = it->second;
  int64_t accepted = 0;
  int64_t dropped = 0;
  for (int i = 0; i < batch.samples_size(); ++i) {
    const weft::v1::NicSample& sample = batch.samples(i);
    auto is_sample_nic = [&](const NicState& n) {
      return n.nic.port() == sample.port() && n.nic.device() == sample.device();
    };
    // Agents send their NICs in the order they registered them: try that one first.
    auto nic = i < static_cast<int>(node.nics.size()) && is_sample_nic(node.nics[i])
                   ? node.nics.begin() + i
                   : std::find_if(node.nics.begin(), node.nics.end(), is_sample_nic);
    if (nic == node.nics.end()) {
      ++dropped;
      WEFT_LOG(DEBUG) << "dropped sample node=" << name << " nic=" << sample.device()
                      << " port=" << sample.port() << " reason=\"NIC not registered\"";
      continue;
    }
    if (!nic->window.empty()) {
      nic->link_flap_total += LinkFlapIncrease(nic->window.back(), prepared[i].reading);
    }
    nic->window.push_back(std::move(prepared[i].reading));
    while (nic->window.size() > static_cast<size_t>(options_.window_samples)) {
      nic->link_flap_total -= LinkFlapIncrease(nic->window[0], nic->window[1]);
      nic->window.pop_front();
    }
    // The old bytes' buffer becomes the scratch for this thread's next batch.
    nic->latest_serialized.swap(prepared[i].serialized);
    nic->has_latest = prepared[i].serialized_ok;
    UpdateFindings(it->first, *nic, now);
    ++accepted;
  }
  Summarize(node);
  if (dropped > 0) metrics_->SamplesDropped("unknown_nic", dropped);
  metrics_->TelemetryAccepted(accepted);

  node.last_seen = now;
  if (!node.reporting) {
    const NodeState before = StateOf(node);
    node.reporting = true;
    node.health.Resume(now);
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
  const std::vector<NodeRef>& order = SweepOrder();
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + kPrefetchAhead < order.size()) __builtin_prefetch(order[i + kPrefetchAhead].second);
    const std::string& name = *order[i].first;
    Node& node = *order[i].second;
    if (!node.reporting) continue;
    const absl::Duration silence = now - node.last_seen;
    if (silence <= down_after_) continue;
    const NodeState before = StateOf(node);
    node.reporting = false;
    node.health.Suspend();
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
                                                      absl::string_view reason,
                                                      absl::string_view who) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", name, " is not registered"));
  }
  Node& node = it->second;
  const std::string stored_reason(reason.empty() ? kNoReasonGiven : reason);
  store::StoredNode stored = ToStored(it->first, node);
  stored.drained = true;
  stored.drained_by = weft::v1::DRAIN_SOURCE_OPERATOR;
  stored.drain_reason = stored_reason;
  stored.drained_who = std::string(who);
  if (absl::Status persisted = Persist(stored); !persisted.ok()) return persisted;
  node.drained_who = std::string(who);
  const NodeState before = StateOf(node);
  weft::v1::Event event = MakeEvent(weft::v1::EVENT_KIND_DRAINED, name, clock_->Now(),
                                    stored_reason);
  event.set_drained_by(weft::v1::DRAIN_SOURCE_OPERATOR);
  event.set_who(std::string(who));
  event.set_from_state(before);
  event.set_to_state(weft::v1::NODE_STATE_DRAINED);
  if (node.drained) {
    if (node.drained_by == weft::v1::DRAIN_SOURCE_AUTO) {
      event.set_message(absl::StrCat(stored_reason, " (operator took over the auto drain: ",
                                     node.drain_reason, ")"));
    }
    WEFT_LOG(INFO) << "drain reason updated node=" << name << " reason=\"" << stored_reason
                   << "\" previous=\"" << node.drain_reason << "\"";
    node.drain_reason = stored_reason;
    node.drained_by = weft::v1::DRAIN_SOURCE_OPERATOR;
    events_.Append(std::move(event));
    return StatusOf(node);
  }
  node.drained = true;
  node.drained_by = weft::v1::DRAIN_SOURCE_OPERATOR;
  node.drain_reason = stored_reason;
  metrics_->NodeDrained();
  CountStateChange(it->first, before, node, absl::StrCat("drained: ", stored_reason));
  events_.Append(std::move(event));
  return StatusOf(node);
}

absl::StatusOr<weft::v1::NodeStatus> Inventory::Undrain(absl::string_view name,
                                                        absl::string_view who) {
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
  store::StoredNode stored = ToStored(it->first, node);
  stored.drained = false;
  stored.drained_by = weft::v1::DRAIN_SOURCE_UNSPECIFIED;
  stored.drain_reason.clear();
  stored.drained_who.clear();
  if (absl::Status persisted = Persist(stored); !persisted.ok()) return persisted;
  const absl::Time now = clock_->Now();
  const NodeState before = StateOf(node);
  const weft::v1::DrainSource drained_by = node.drained_by;
  node.drained_who.clear();
  node.drained = false;
  node.drained_by = weft::v1::DRAIN_SOURCE_UNSPECIFIED;
  node.drain_reason.clear();
  // The operator wants the node back: a still-sick node gets a full auto-drain
  // period before the policy may take it again.
  if (node.sick) node.sick_or_clean_since = now;
  CountStateChange(it->first, before, node, "undrained");
  weft::v1::Event event = MakeEvent(
      weft::v1::EVENT_KIND_UNDRAINED, name, now,
      drained_by == weft::v1::DRAIN_SOURCE_AUTO ? "undrained by an operator (was auto-drained)"
                                                : "undrained by an operator");
  event.set_drained_by(weft::v1::DRAIN_SOURCE_OPERATOR);
  event.set_who(std::string(who));
  event.set_from_state(before);
  event.set_to_state(StateOf(node));
  events_.Append(std::move(event));
  return StatusOf(node);
}

weft::v1::NodeStatus Inventory::StatusOf(const Node& node, bool samples) const {
  weft::v1::NodeStatus status;
  *status.mutable_info() = node.info;
  status.set_state(StateOf(node));
  status.set_reporting(node.reporting);
  status.set_drain_reason(node.drain_reason);
  status.set_last_seen_us(absl::ToUnixMicros(node.last_seen));
  status.set_registered_at_us(absl::ToUnixMicros(node.registered_at));
  status.set_session_epoch(node.epoch);
  status.set_health(node.health.state());
  status.set_drained_by(node.drained_by);
  status.set_drained_who(node.drained_who);
  if (!samples) return status;
  for (const NicState& nic : node.nics) {
    weft::v1::NicStatus* nic_status = status.add_nics();
    *nic_status->mutable_nic() = nic.nic;
    if (nic.has_latest) nic_status->mutable_latest()->ParseFromString(nic.latest_serialized);
    // A silent node's findings describe the past, like its rates.
    if (node.reporting) {
      for (const Finding& finding : nic.findings) *status.add_findings() = finding.ToProto();
    }
  }
  if (node.reporting) {
    for (const auto& [source, findings] : node.external_findings) {
      for (const Finding& finding : findings) *status.add_findings() = finding.ToProto();
    }
  }
  *status.mutable_rates() = ToProto(RatesOf(node));
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

std::vector<weft::v1::NodeStatus> Inventory::ListNodeIdentities() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<weft::v1::NodeStatus> result;
  result.reserve(nodes_.size());
  for (const auto& [name, node] : nodes_) result.push_back(StatusOf(node, /*samples=*/false));
  return result;
}

void Inventory::UpdateFindings(const std::string& node_name, NicState& nic,
                               absl::Time now) {
  // The flap total says whether there is anything to find; only then is the window
  // read for when the first flap was seen.
  const LinkFlaps flaps = nic.link_flap_total == 0 ? LinkFlaps() : CountLinkFlaps(nic.window);
  std::vector<Finding> current = EvaluateNicWindow(nic.nic.device(), nic.nic.port(),
                                                   nic.window, options_.health, flaps);
  auto has_rule = [](const std::vector<Finding>& findings, HealthRule rule) {
    return std::any_of(findings.begin(), findings.end(),
                       [rule](const Finding& f) { return f.rule == rule; });
  };
  for (const Finding& finding : current) {
    if (has_rule(nic.findings, finding.rule)) continue;
    metrics_->HealthRuleFired(HealthRuleName(finding.rule));
    const std::string description = DescribeFinding(finding);
    WEFT_LOG(WARNING) << "health rule fired node=" << node_name << " " << description;
    weft::v1::Event event =
        MakeEvent(weft::v1::EVENT_KIND_RULE_FIRED, node_name, now, description);
    *event.mutable_finding() = finding.ToProto();
    events_.Append(std::move(event));
  }
  for (const Finding& finding : nic.findings) {
    if (has_rule(current, finding.rule)) continue;
    const std::string description =
        absl::StrCat(HealthRuleName(finding.rule), " on ", finding.device, "/", finding.port,
                     " cleared after ", Rounded(now - finding.since), " (last: ",
                     finding.detail, ")");
    WEFT_LOG(INFO) << "health rule cleared node=" << node_name << " " << description;
    weft::v1::Event event =
        MakeEvent(weft::v1::EVENT_KIND_RULE_CLEARED, node_name, now, description);
    *event.mutable_finding() = finding.ToProto();
    events_.Append(std::move(event));
  }
  nic.findings = std::move(current);
}

absl::Status Inventory::SetExternalFindings(absl::string_view name, absl::string_view source,
                                            std::vector<Finding> findings) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return absl::NotFoundError(absl::StrCat("node ", name, " is not registered"));
  }
  Node& node = it->second;
  auto held = node.external_findings.find(source);
  for (const Finding& finding : findings) {
    const bool was_held =
        held != node.external_findings.end() &&
        std::any_of(held->second.begin(), held->second.end(), [&](const Finding& f) {
          return f.rule == finding.rule && f.device == finding.device;
        });
    if (!was_held) metrics_->HealthRuleFired(HealthRuleName(finding.rule));
  }
  if (findings.empty()) {
    if (held != node.external_findings.end()) node.external_findings.erase(held);
  } else if (held != node.external_findings.end()) {
    held->second = std::move(findings);
  } else {
    node.external_findings.emplace(std::string(source), std::move(findings));
  }
  Summarize(node);
  return absl::OkStatus();
}

std::optional<StateChange> Inventory::ApplyAutoDrain(const std::string& name, Node& node,
                                                     absl::Time now) {
  AutoDrainInput input;
  input.drained = node.drained;
  input.drained_by = node.drained_by;
  input.sick = node.sick;
  input.condition_since = node.sick_or_clean_since;
  const AutoDrainAction action = DecideAutoDrain(options_.auto_drain, input, now);
  if (action == AutoDrainAction::kNone) return std::nullopt;
  const NodeState before = StateOf(node);
  const std::string held = Rounded(now - node.sick_or_clean_since);
  store::StoredNode stored = ToStored(name, node);
  stored.drained = action == AutoDrainAction::kDrain;
  stored.drained_by = stored.drained ? weft::v1::DRAIN_SOURCE_AUTO
                                     : weft::v1::DRAIN_SOURCE_UNSPECIFIED;
  stored.drain_reason =
      !stored.drained ? ""
      : node.reporting
          ? absl::StrCat("auto: ", node.health_reason, " (DEGRADED for ", held, ")")
          : absl::StrCat("auto: no telemetry (DOWN for ", held, ")");
  stored.drained_who.clear();
  // Not committed: leave the node as it is; the next sweep decides again.
  if (!Persist(stored).ok()) return std::nullopt;
  node.drained = stored.drained;
  node.drained_by = stored.drained_by;
  node.drain_reason = stored.drain_reason;
  node.drained_who.clear();
  if (action == AutoDrainAction::kDrain) {
    metrics_->NodeAutoDrained();
  } else {
    metrics_->NodeAutoUndrained();
  }
  const std::string message =
      action == AutoDrainAction::kDrain
          ? node.drain_reason
          : absl::StrCat("auto: HEALTHY for ", held, ", undrained");
  std::optional<StateChange> change = CountStateChange(name, before, node, message);
  weft::v1::Event event = MakeEvent(action == AutoDrainAction::kDrain
                                        ? weft::v1::EVENT_KIND_DRAINED
                                        : weft::v1::EVENT_KIND_UNDRAINED,
                                    name, now, message);
  event.set_drained_by(weft::v1::DRAIN_SOURCE_AUTO);
  event.set_from_state(before);
  event.set_to_state(StateOf(node));
  events_.Append(std::move(event));
  return change;
}

std::vector<StateChange> Inventory::EvaluateHealth() {
  const absl::Time now = clock_->Now();
  std::vector<StateChange> changes;
  std::map<HealthRule, int64_t> active;
  std::vector<NodeSummary> summaries;
  absl::MutexLock lock(&mu_);
  summaries.reserve(nodes_.size());
  const std::vector<NodeRef>& order = SweepOrder();
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + kPrefetchAhead < order.size()) __builtin_prefetch(order[i + kPrefetchAhead].second);
    const std::string& name = *order[i].first;
    Node& node = *order[i].second;
    const NodeState before = StateOf(node);
    if (node.reporting) {
      const Finding* earliest = nullptr;
      int count = 0;
      auto consider = [&](const std::vector<Finding>& findings) {
        for (const Finding& finding : findings) {
          ++active[finding.rule];
          ++count;
          if (earliest == nullptr || finding.since < earliest->since) earliest = &finding;
        }
      };
      for (size_t i = 0; node.findings > 0 && i < node.nics.size(); ++i) {
        consider(node.nics[i].findings);
      }
      if (node.findings > 0) {
        for (const auto& [source, findings] : node.external_findings) consider(findings);
      }
      std::optional<absl::Time> firing_since;
      if (earliest != nullptr) firing_since = earliest->since;
      if (node.health.Observe(now, firing_since)) {
        std::string reason;
        if (node.health.degraded()) {
          reason = DescribeFinding(*earliest);
          if (count > 1) absl::StrAppend(&reason, " (+", count - 1, " more)");
          node.health_reason = reason;
        } else {
          reason = absl::StrCat("no health rule fired for ",
                                Rounded(options_.health_timings.recover_after));
        }
        if (auto change = NoteStateChange(name, before, node, reason)) {
          changes.push_back(*std::move(change));
        } else {
          WEFT_LOG(INFO) << "node health changed while drained node=" << name
                         << " health=" << NodeStateName(node.health.state())
                         << " reason=\"" << reason << "\"";
        }
      }
    }
    const bool sick = !node.reporting || node.health.degraded();
    if (sick != node.sick) {
      node.sick = sick;
      node.sick_or_clean_since = now;
    }
    if (auto change = ApplyAutoDrain(name, node, now)) changes.push_back(*std::move(change));
    summaries.push_back(NodeSummary{node.pod, node.rack, StateOf(node), RatesOf(node)});
  }
  for (HealthRule rule : kAllHealthRules) {
    auto it = active.find(rule);
    metrics_->SetActiveFindings(HealthRuleName(rule), it == active.end() ? 0 : it->second);
  }
  metrics_->SetRackStatus(AggregateRacks(summaries, ""));
  return changes;
}

std::vector<StateChange> Inventory::Sweep() {
  std::vector<StateChange> changes = EvaluateLiveness();
  std::vector<StateChange> health = EvaluateHealth();
  changes.insert(changes.end(), std::make_move_iterator(health.begin()),
                 std::make_move_iterator(health.end()));
  return changes;
}

weft::v1::ListEventsResponse Inventory::ListEvents(
    const weft::v1::ListEventsRequest& request) const {
  EventQuery query;
  query.node = request.node();
  if (request.since_us() != 0) query.since = absl::FromUnixMicros(request.since_us());
  if (request.within_ms() != 0) {
    const absl::Time start =
        clock_->Now() - absl::Milliseconds(static_cast<int64_t>(std::min<uint64_t>(
                            request.within_ms(), std::numeric_limits<int64_t>::max() / 1000)));
    query.since = std::max(query.since, start);
  }
  query.limit = request.limit();
  return events_.List(query);
}

weft::v1::ListRacksResponse Inventory::ListRacks(absl::string_view pod) const {
  std::vector<NodeSummary> summaries;
  {
    absl::ReaderMutexLock lock(&mu_);
    summaries.reserve(nodes_.size());
    for (const auto& [name, node] : nodes_) {
      summaries.push_back(NodeSummary{node.info.pod(), node.info.rack(), StateOf(node),
                                      RatesOf(node)});
    }
  }
  return AggregateRacks(summaries, pod);
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
