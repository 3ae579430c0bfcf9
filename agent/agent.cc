#include "agent/agent.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "agent/counter_math.h"
#include "agent/stable_hash.h"
#include "agent/tunables/applier.h"
#include "common/clock.h"
#include "common/tunable_ranges.h"
#include "common/logging.h"

namespace weft::agent {
namespace {

absl::Duration Millis(uint32_t ms, uint32_t fallback_ms) {
  return absl::Milliseconds(ms != 0 ? ms : fallback_ms);
}

// Prefixes a status message with what the agent was doing.
absl::Status Annotate(const absl::Status& status, absl::string_view what) {
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

}  // namespace

Agent::Agent(weft::v1::AgentConfig config, NicBackend* backend, ControllerClient* client,
             const Clock* clock, prometheus::Registry* registry, HealthServer* health,
             probe::Pingmesh* pingmesh)
    : config_(std::move(config)),
      backend_(backend),
      client_(client),
      clock_(clock),
      health_(health),
      pingmesh_(pingmesh),
      interval_(Millis(config_.interval_ms(), 1000)),
      drift_check_interval_(absl::Milliseconds(config_.drift_check_interval_ms())),
      metrics_(*registry, config_.node_name()),
      backoff_(Millis(config_.reconnect().initial_backoff_ms(), 200),
               Millis(config_.reconnect().max_backoff_ms(), 10000),
               StableHash(config_.node_name())) {}

Agent::~Agent() { Stop(); }

absl::Status Agent::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("agent already started");
    started_ = true;
  }
  absl::StatusOr<NodeInventory> inventory;
  {
    absl::MutexLock lock(&backend_mu_);
    inventory = backend_->Discover();
  }
  if (!inventory.ok()) return Annotate(inventory.status(), "discovering NICs and GPUs");
  inventory_ = *std::move(inventory);
  PublishInventory();
  for (const std::string& note : inventory_.notes) WEFT_LOG(INFO) << "discovery: " << note;
  for (const weft::v1::Nic& nic : inventory_.nics) {
    for (const std::string& warning : nic.discovery_warnings()) {
      WEFT_LOG(WARNING) << "discovery device=" << nic.device() << " warning=\"" << warning << "\"";
    }
  }
  for (const weft::v1::Nic& nic : inventory_.nics) metrics_.AddNic(nic);
  // The NICs' line rates bound the probe rate.
  if (pingmesh_ != nullptr) pingmesh_->Start(inventory_.nics, [this] { ProbeWindowsClosed(); });
  SetRegistered(false);
  WEFT_LOG(INFO) << "agent starting node=" << config_.node_name()
                 << " controller=" << config_.controller_address()
                 << " nics=" << inventory_.nics.size() << " gpus=" << inventory_.gpus.size()
                 << " interval_ms=" << absl::ToInt64Milliseconds(interval_);
  loop_thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void Agent::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
  }
  // Cancels a Register or Connect in flight and the open stream.
  client_->Shutdown();
  if (loop_thread_.joinable()) loop_thread_.join();
  if (pingmesh_ != nullptr) pingmesh_->Stop();
}

bool Agent::registered() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

uint64_t Agent::highest_epoch() const {
  absl::MutexLock lock(&mu_);
  return highest_epoch_;
}

NodeInventory Agent::inventory() const {
  absl::MutexLock lock(&mu_);
  return published_inventory_;
}

void Agent::PublishInventory() {
  absl::MutexLock lock(&mu_);
  published_inventory_ = inventory_;
}

void Agent::PublishPortStates(const std::vector<RawNicReading>& readings) {
  absl::MutexLock lock(&mu_);
  for (const RawNicReading& reading : readings) {
    if (!reading.error.empty()) continue;
    for (weft::v1::Nic& nic : published_inventory_.nics) {
      if (nic.device() == reading.device && nic.port() == reading.port) {
        nic.set_state(reading.port_state);
      }
    }
  }
}

bool Agent::stop_requested() const {
  absl::MutexLock lock(&mu_);
  return stop_requested_;
}

bool Agent::WaitUntil(const Clock& clock, absl::Time deadline, bool session_end) {
  absl::MutexLock lock(&mu_);
  auto woken = [this, session_end]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stop_requested_ || (session_end && stream_ended_);
  };
  return clock.AwaitWithDeadline(&mu_, absl::Condition(&woken), deadline);
}

void Agent::ProbeWindowsClosed() {
  absl::MutexLock lock(&mu_);
  probe_windows_closed_ = true;
}

bool Agent::WaitForCollection(absl::Time next_collection, OutboundQueue* outbound) {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_requested_ || stream_ended_ || probe_windows_closed_;
      };
      clock_->AwaitWithDeadline(&mu_, absl::Condition(&woken), next_collection);
      if (stop_requested_ || stream_ended_) return true;
      if (!probe_windows_closed_) return false;  // time to collect
      probe_windows_closed_ = false;
    }
    // Telemetry still queued means the stream is behind: the windows wait for the next
    // collection rather than push a batch out of the bounded queue.
    if (outbound->queued_telemetry() > 0) continue;
    weft::v1::AgentMessage message;
    weft::v1::TelemetryBatch* batch = message.mutable_telemetry();
    batch->set_collected_at_us(absl::ToUnixMicros(clock_->Now()));
    batch->set_probe_windows_only(true);
    AddProbeWindows(batch);
    if (batch->probe_windows().empty()) continue;  // the last collection took them
    if (outbound->PushTelemetry(std::move(message))) metrics_.TelemetryDropped();
  }
}

void Agent::SetRegistered(bool registered) {
  {
    absl::MutexLock lock(&mu_);
    registered_ = registered;
  }
  metrics_.SetRegistered(registered);
  if (health_ != nullptr) health_->SetServing(registered);
}

void Agent::Run() {
  int attempt = 0;
  while (!stop_requested()) {
    ++attempt;
    if (attempt > 1) metrics_.Reconnect();
    bool lived_an_interval = false;
    const absl::Status ended = RunSession(/*rediscover=*/attempt > 1, &lived_an_interval);
    if (stop_requested()) break;
    // A session that worked for a while starts the backoff over; one that was fenced
    // does not: this agent never holds two sessions, so ABORTED means another agent
    // uses this node's name, and the two must not take turns at the interval rate.
    if (lived_an_interval && ended.code() != absl::StatusCode::kAborted) backoff_.Reset();
    const absl::Duration delay = backoff_.Next();
    // One line per failed attempt; the growing backoff keeps this from flooding.
    WEFT_LOG(WARNING) << "controller session ended node=" << config_.node_name()
                      << " attempt=" << attempt << " error=\"" << ended.ToString()
                      << "\" retry_in_ms=" << absl::ToInt64Milliseconds(delay);
    WaitUntil(*clock_, clock_->Now() + delay, /*session_end=*/false);
  }
  WEFT_LOG(INFO) << "agent stopped node=" << config_.node_name();
}

weft::v1::NodeInfo Agent::NodeInfo() const {
  weft::v1::NodeInfo node;
  node.set_name(config_.node_name());
  node.set_rack(config_.rack());
  node.set_pod(config_.pod());
  node.set_agent_version(kAgentVersion);
  if (config_.metrics_address() != "off") node.set_metrics_address(config_.metrics_address());
  if (pingmesh_ != nullptr) node.set_probe_udp_port(pingmesh_->udp_port());
  for (const weft::v1::Nic& nic : inventory_.nics) {
    weft::v1::Nic* added = node.add_nics();
    *added = nic;
    if (pingmesh_ != nullptr) added->set_probe_ud_qpn(pingmesh_->ud_qpn(nic.device()));
  }
  for (const weft::v1::Gpu& gpu : inventory_.gpus) *node.add_gpus() = gpu;
  return node;
}

absl::Status Agent::RunSession(bool rediscover, bool* lived_an_interval) {
  if (rediscover) {
    // Send the state as it is now: a port may have gone down since the last session.
    absl::StatusOr<NodeInventory> inventory;
    {
      absl::MutexLock lock(&backend_mu_);
      inventory = backend_->Discover();
    }
    if (inventory.ok()) {
      inventory_ = *std::move(inventory);
      PublishInventory();
    } else {
      WEFT_LOG(WARNING) << "rediscovery failed, registering the last inventory error=\""
                        << inventory.status().ToString() << "\"";
    }
  }

  weft::v1::RegisterRequest request;
  *request.mutable_node() = NodeInfo();
  request.set_last_session_epoch(highest_epoch());
  absl::StatusOr<weft::v1::RegisterResponse> response = client_->Register(request);
  if (!response.ok()) return Annotate(response.status(), "register");
  const uint64_t epoch = response->session_epoch();
  {
    absl::MutexLock lock(&mu_);
    highest_epoch_ = std::max(highest_epoch_, epoch);
  }
  if (response->telemetry_interval_ms() != 0 &&
      absl::Milliseconds(response->telemetry_interval_ms()) < interval_) {
    WEFT_LOG(WARNING) << "controller expects telemetry every " << response->telemetry_interval_ms()
                      << " ms but this agent sends every " << absl::ToInt64Milliseconds(interval_)
                      << " ms; it may judge this node down";
  }

  weft::v1::StreamHello hello;
  hello.set_node_name(config_.node_name());
  hello.set_session_epoch(epoch);
  hello.set_applied_version(applied_version());
  absl::StatusOr<std::unique_ptr<ControllerStream>> connected = client_->Connect(hello);
  if (!connected.ok()) return Annotate(connected.status(), "connect");
  std::unique_ptr<ControllerStream> stream = *std::move(connected);

  {
    absl::MutexLock lock(&mu_);
    stream_ended_ = false;
  }
  SetRegistered(true);
  WEFT_LOG(INFO) << "registered node=" << config_.node_name() << " epoch=" << epoch
                 << " controller_version=" << response->controller_version();

  // Collection never waits on the stream: batches go through a bounded queue that a
  // writer thread drains (a slow controller costs the oldest batches, never an ack).
  OutboundQueue outbound(kTelemetryQueueCapacity);
  absl::Status final_status;
  std::atomic<bool> write_failed{false};
  std::thread reader([this, &stream, &outbound, &final_status] {
    ReadDownlink(stream.get(), &outbound, &final_status);
  });
  std::thread writer(
      [this, &stream, &outbound, &write_failed] { WriteUplink(stream.get(), &outbound, &write_failed); });

  absl::Time next = clock_->Now();
  while (true) {
    weft::v1::AgentMessage message;
    *message.mutable_telemetry() = Collect();
    if (outbound.PushTelemetry(std::move(message))) metrics_.TelemetryDropped();
    if (write_failed) break;
    // Fixed rate; intervals missed (a slow write) are skipped, not bunched up.
    next = NextTick(next, clock_->Now(), interval_);
    if (WaitForCollection(next, &outbound)) break;
    *lived_an_interval = true;
  }

  SetRegistered(false);
  outbound.Close();
  if (write_failed) {
    // The call is over; give the reader a moment to collect the controller's status
    // (e.g. ABORTED) before cancelling would turn it into CANCELLED.
    // A wait on the network, so on real time whatever the agent's clock.
    WaitUntil(RealClock(), absl::Now() + absl::Milliseconds(500), /*session_end=*/true);
  }
  stream->Cancel();  // unblocks a Write() stuck on a controller that stopped reading
  reader.join();
  writer.join();
  stream.reset();

  if (stop_requested()) return absl::OkStatus();
  if (final_status.code() == absl::StatusCode::kAborted) {
    return Annotate(final_status, "fenced by the controller, re-registering");
  }
  if (final_status.ok()) return absl::UnavailableError("controller closed the stream");
  return Annotate(final_status, "stream");
}

void Agent::WriteUplink(ControllerStream* stream, OutboundQueue* outbound,
                        std::atomic<bool>* failed) {
  while (std::optional<weft::v1::AgentMessage> message = outbound->Pop()) {
    // A batch of probe windows alone is not a collection: counted apart.
    const bool probe_windows_only =
        message->has_telemetry() && message->telemetry().probe_windows_only();
    const bool telemetry = message->has_telemetry() && !probe_windows_only;
    if (!stream->Write(*message).ok()) {
      // A write cut short by our own Stop() is not a send error.
      if (!stop_requested()) metrics_.SendError();
      *failed = true;
      return;
    }
    if (telemetry) metrics_.BatchSent();
    if (probe_windows_only) metrics_.ProbeWindowBatchSent();
  }
}

void Agent::ReadDownlink(ControllerStream* stream, OutboundQueue* outbound,
                         absl::Status* final_status) {
  weft::v1::ControllerMessage message;
  while (stream->Read(&message)) {
    if (!controller_epoch_.Admit(message.controller_epoch())) {
      metrics_.ControllerMessageFenced();
      WEFT_LOG(WARNING) << "ignored a message from a deposed controller epoch="
                        << message.controller_epoch()
                        << " highest_seen=" << controller_epoch_.highest();
      continue;
    }
    if (message.has_desired_state()) HandleDesiredState(message.desired_state(), outbound);
    if (message.has_pinglist()) HandlePinglist(message.pinglist());
  }
  *final_status = stream->Finish();
  absl::MutexLock lock(&mu_);
  stream_ended_ = true;
}

void Agent::HandleDesiredState(const weft::v1::DesiredState& state, OutboundQueue* outbound) {
  const bool dry_run = config_.tunables_dry_run();
  ApplyOutcome outcome;
  if (!state.node_name().empty() && state.node_name() != config_.node_name()) {
    // A state meant for another node (a controller bug) must not touch this one.
    weft::v1::ParameterError* error = &outcome.errors.emplace_back();
    error->set_parameter("node_name");
    error->set_value(state.node_name());
    error->set_reason(absl::StrCat("this agent is node '", config_.node_name(), "'"));
  } else {
    absl::MutexLock lock(&backend_mu_);
    outcome = ApplyDesiredState(state, backend_->Tunables(), dry_run);
  }
  for (const ParameterChange& change : outcome.changes) {
    WEFT_LOG(INFO) << (dry_run ? "dry run, would change " : "changed ") << FormatChange(change)
                   << " version=" << state.version();
  }
  uint64_t applied_version = 0;
  {
    absl::MutexLock lock(&mu_);
    if (outcome.accepted) {
      applied_ = state;
      ++apply_generation_;
    }
    applied_version = applied_.version();
  }
  metrics_.DesiredStateAnswered(outcome.accepted, applied_version);
  if (outcome.accepted) {
    WEFT_LOG(INFO) << "desired state applied node=" << config_.node_name()
                   << " version=" << state.version() << " nonce=" << state.nonce()
                   << " changes=" << outcome.changes.size() << ": ACK";
  } else {
    WEFT_LOG(WARNING) << "desired state refused node=" << config_.node_name()
                      << " version=" << state.version() << " nonce=" << state.nonce()
                      << " errors=" << outcome.errors.size() << ": NACK, first: "
                      << (outcome.errors.empty() ? "" : FormatParameterError(outcome.errors[0]));
  }
  weft::v1::AgentMessage reply;
  weft::v1::DesiredStateAck* ack = reply.mutable_desired_state_ack();
  ack->set_version(state.version());
  ack->set_nonce(state.nonce());
  ack->set_accepted(outcome.accepted);
  for (weft::v1::ParameterValue& value : outcome.read_back) *ack->add_read_back() = std::move(value);
  for (weft::v1::ParameterError& error : outcome.errors) *ack->add_errors() = std::move(error);
  outbound->PushAck(std::move(reply));
}

void Agent::HandlePinglist(const weft::v1::Pinglist& pinglist) {
  if (pingmesh_ == nullptr) {
    WEFT_LOG(WARNING) << "pinglist ignored node=" << config_.node_name()
                      << " version=" << pinglist.version()
                      << ": probing is off (probe.udp_port is 0)";
    return;
  }
  absl::Status applied = pingmesh_->Apply(pinglist);
  if (!applied.ok()) {
    // The previous list goes on: a bad list must not stop the probing that finds faults.
    WEFT_LOG(WARNING) << "pinglist refused node=" << config_.node_name()
                      << " version=" << pinglist.version() << " error=\"" << applied.message()
                      << "\"";
  }
}

uint64_t Agent::applied_version() const {
  absl::MutexLock lock(&mu_);
  return applied_.version();
}

weft::v1::TunablesStatus Agent::CheckTunables() {
  weft::v1::TunablesStatus status;
  weft::v1::DesiredState applied;
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    applied = applied_;
    generation = apply_generation_;
  }
  status.set_applied_version(applied.version());
  if (applied.version() == 0) return status;
  const absl::Time now = clock_->Now();
  if (generation != drift_checked_generation_ ||
      now - drift_checked_at_ >= drift_check_interval_) {
    absl::MutexLock lock(&backend_mu_);
    drift_ = CheckDrift(applied, backend_->Tunables());
    drift_checked_at_ = now;
    drift_checked_generation_ = generation;
    metrics_.SetTunablesDrift(drift_.size());
  }
  for (const weft::v1::TunableDrift& entry : drift_) *status.add_drift() = entry;
  return status;
}

void Agent::NoteNicError(const std::string& device, const std::string& error) {
  auto it = nic_errors_.find(device);
  const std::string previous = it == nic_errors_.end() ? "" : it->second;
  if (error == previous) return;  // log changes only, not every interval
  if (error.empty()) {
    WEFT_LOG(INFO) << "nic readable again device=" << device;
    nic_errors_.erase(it);
  } else {
    WEFT_LOG(WARNING) << "cannot read nic device=" << device << " error=\"" << error << "\"";
    nic_errors_[device] = error;
  }
}

void Agent::NoteMissingCounters(const RawNicReading& reading) {
  if (!reading.error.empty()) return;  // an unreadable port says so instead
  metrics_.SetMissingCounters(reading.device, reading.port, reading.missing_counters.size());
  const NicKey key(reading.device, reading.port);
  std::vector<std::string>& logged = missing_counters_[key];
  if (reading.missing_counters == logged) return;
  if (reading.missing_counters.empty()) {
    WEFT_LOG(INFO) << "nic reports every counter again device=" << reading.device
                   << " port=" << reading.port;
  } else {
    WEFT_LOG(WARNING) << "nic lacks counters (left out of telemetry, not zero) device="
                      << reading.device << " port=" << reading.port << " missing=\""
                      << absl::StrJoin(reading.missing_counters, ", ") << "\"";
  }
  logged = reading.missing_counters;
}

void Agent::AddProbeWindows(weft::v1::TelemetryBatch* batch) {
  if (pingmesh_ == nullptr) return;
  batch->set_pinglist_version(pingmesh_->pinglist_version());
  absl::Time through = absl::InfinitePast();
  for (weft::v1::ProbeWindow& window : pingmesh_->TakeWindows(&through)) {
    *batch->add_probe_windows() = std::move(window);
  }
  if (through != absl::InfinitePast()) {
    batch->set_probe_windows_through_us(absl::ToUnixMicros(through));
  }
}

weft::v1::TelemetryBatch Agent::Collect() {
  weft::v1::TelemetryBatch batch;
  batch.set_collected_at_us(absl::ToUnixMicros(clock_->Now()));
  // Real elapsed time (not the injected clock): this is a cost measurement.
  const absl::Time started = absl::Now();
  absl::StatusOr<std::vector<RawNicReading>> readings;
  {
    absl::MutexLock lock(&backend_mu_);
    readings = backend_->ReadCounters();
  }
  metrics_.ObserveCollection(absl::Now() - started);
  *batch.mutable_tunables() = CheckTunables();
  AddProbeWindows(&batch);
  // Traces ride with collections only (a windows-only batch carries windows alone).
  if (pingmesh_ != nullptr) {
    for (weft::v1::ProbePathTrace& trace : pingmesh_->TakeTraces()) {
      *batch.add_probe_traces() = std::move(trace);
    }
  }
  if (!readings.ok()) {
    // Still one sample per NIC, each saying why it is empty.
    const std::string error = readings.status().ToString();
    for (const weft::v1::Nic& nic : inventory_.nics) {
      weft::v1::NicSample* sample = batch.add_samples();
      sample->set_device(nic.device());
      sample->set_port(nic.port());
      sample->set_timestamp_us(batch.collected_at_us());
      sample->set_error(error);
      metrics_.CollectionError(nic.device());
      NoteNicError(nic.device(), error);
    }
    return batch;
  }
  PublishPortStates(*readings);  // a port that went down is not offered to jobs
  for (RawNicReading& reading : *readings) {
    const NicKey key(reading.device, reading.port);
    auto previous = last_good_.find(key);
    NicUpdate update =
        ComputeNicUpdate(previous == last_good_.end() ? nullptr : &previous->second, reading);
    NoteNicError(reading.device, reading.error);
    NoteMissingCounters(reading);
    if (!reading.error.empty()) {
      metrics_.CollectionError(reading.device);
    } else {
      if (update.increase.has_value()) {
        metrics_.AddNicIncrease(reading.device, reading.port, *update.increase);
      } else if (previous != last_good_.end() && reading.timestamp > previous->second.timestamp) {
        WEFT_LOG(INFO) << "counters went backwards (NIC reset or driver reload), rates "
                          "restart device="
                       << reading.device;
      }
      last_good_[key] = std::move(reading);
    }
    *batch.add_samples() = std::move(update.sample);
  }
  return batch;
}

}  // namespace weft::agent
