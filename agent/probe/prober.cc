#include "agent/probe/prober.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "common/yaml_proto.h"

namespace weft::agent::probe {
namespace {

// RoCE v2 source ports a flow label can choose (0xC000 | fl, fl = port & 0x3FFF).
constexpr uint32_t kUdMinSourcePort = 0xC000;

// How long a receiver waits before looking at Stop() again (Wake() ends it sooner).
constexpr absl::Duration kReceivePoll = absl::Milliseconds(200);

prometheus::Counter& AddCounter(prometheus::Registry* registry, const std::string& name,
                                const std::string& help, const std::string& node) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(*registry).Add(
      {{"node", node}});
}

prometheus::Gauge& AddGauge(prometheus::Registry* registry, const std::string& name,
                            const std::string& help, const std::string& node) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(*registry).Add(
      {{"node", node}});
}

absl::Status PeerError(int index, const weft::v1::ProbePeer& peer, absl::string_view field,
                       absl::string_view problem, absl::string_view accepted) {
  return absl::InvalidArgumentError(absl::StrCat("pinglist: peers[", index, "] (node '",
                                                 peer.node(), "' ", peer.address(), ") field '",
                                                 field, "': ", problem, "; accepted: ", accepted));
}

}  // namespace

absl::Status ValidatePinglist(const weft::v1::Pinglist& pinglist, size_t max_flows) {
  if (absl::Status rules = ValidateRules(pinglist, "pinglist"); !rules.ok()) return rules;
  size_t flows = 0;
  for (int i = 0; i < pinglist.peers_size(); ++i) {
    const weft::v1::ProbePeer& peer = pinglist.peers(i);
    flows += std::max(1, peer.source_ports_size());
    if (peer.transport() != weft::v1::PROBE_TRANSPORT_RDMA_UD) continue;
    for (uint32_t port : peer.source_ports()) {
      if (port < kUdMinSourcePort) {
        return PeerError(i, peer, "source_ports", absl::StrCat("value '", port,
                                                               "' cannot be chosen by a "
                                                               "RoCE v2 flow label"),
                         "49152..65535 for rdma_ud");
      }
    }
    if (peer.gid().empty()) {
      return PeerError(i, peer, "gid", "empty", "the peer NIC's RoCE v2 GID for rdma_ud");
    }
    if (peer.ud_qpn() == 0) {
      return PeerError(i, peer, "ud_qpn", "value '0'", "the peer responder's UD QP number");
    }
  }
  if (flows > max_flows) {
    return absl::InvalidArgumentError(absl::StrCat("pinglist: ", flows,
                                                   " flows (peers x source ports); accepted: "
                                                   "at most ",
                                                   max_flows));
  }
  return absl::OkStatus();
}

std::vector<std::pair<ProbeFlow, double>> FlowsOf(const weft::v1::Pinglist& pinglist) {
  std::vector<std::pair<ProbeFlow, double>> flows;
  for (const weft::v1::ProbePeer& peer : pinglist.peers()) {
    ProbeFlow flow;
    flow.peer_node = peer.node();
    flow.peer_nic = peer.nic();
    flow.peer_address = peer.address();
    flow.peer_port = static_cast<uint16_t>(peer.udp_port());
    flow.source_nic = peer.source_nic();
    flow.source_address = peer.source_address();
    flow.dscp = static_cast<uint8_t>(peer.dscp());
    flow.transport = peer.transport() == weft::v1::PROBE_TRANSPORT_RDMA_UD
                         ? weft::v1::PROBE_TRANSPORT_RDMA_UD
                         : weft::v1::PROBE_TRANSPORT_UDP;
    flow.peer_gid = peer.gid();
    flow.peer_qpn = peer.ud_qpn();
    // No source port given: one flow on an ephemeral port (its path is not pinned).
    std::vector<uint32_t> ports(peer.source_ports().begin(), peer.source_ports().end());
    if (ports.empty()) ports.push_back(0);
    const double rate = peer.probes_per_second() / ports.size();
    for (uint32_t port : ports) {
      flow.source_port = static_cast<uint16_t>(port);
      flows.emplace_back(flow, rate);
    }
  }
  return flows;
}

Prober::Prober(ProbeTransport* udp, std::map<std::string, ProbeTransport*> rdma_ud,
               const Clock* clock,
               ProberOptions options, prometheus::Registry* registry)
    : udp_(udp),
      rdma_ud_(std::move(rdma_ud)),
      clock_(clock),
      options_(std::move(options)),
      sent_(AddCounter(registry, "weft_agent_probes_sent_total", "Pingmesh probes sent",
                       options_.node_name)),
      lost_(AddCounter(registry, "weft_agent_probes_lost_total",
                       "Pingmesh probes with no reply within the pinglist's timeout",
                       options_.node_name)),
      answered_(AddCounter(registry, "weft_agent_probes_answered_total",
                           "Pingmesh probes answered in time", options_.node_name)),
      send_errors_(AddCounter(registry, "weft_agent_probe_send_errors_total",
                              "Pingmesh probes that could not be sent", options_.node_name)),
      cpu_seconds_(AddCounter(registry, "weft_agent_prober_cpu_seconds_total",
                              "CPU time of the pingmesh prober's threads", options_.node_name)),
      rate_(AddGauge(registry, "weft_agent_probe_rate",
                     "Pingmesh probes per second scheduled (after the node cap and CPU budget)",
                     options_.node_name)),
      version_(AddGauge(registry, "weft_agent_pinglist_version",
                        "Version of the pinglist probed (0: none)", options_.node_name)),
      cpu_budget_(options_.max_cpu_share) {}

Prober::~Prober() { Stop(); }

void Prober::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return;
    started_ = true;
  }
  sender_ = std::thread([this] { SendLoop(); });
  receivers_.emplace_back([this] { ReceiveLoop(udp_); });
  for (const auto& [device, transport] : rdma_ud_) {
    if (transport == udp_) continue;  // one receiver per transport
    receivers_.emplace_back([this, transport = transport] { ReceiveLoop(transport); });
  }
}

void Prober::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  udp_->Wake();
  for (const auto& [device, transport] : rdma_ud_) transport->Wake();
  if (sender_.joinable()) sender_.join();
  for (std::thread& receiver : receivers_) receiver.join();
  receivers_.clear();
}

absl::Status Prober::Apply(const weft::v1::Pinglist& pinglist) {
  if (absl::Status valid = ValidatePinglist(pinglist, options_.max_flows); !valid.ok()) {
    return valid;
  }
  std::vector<std::pair<ProbeFlow, double>> flows = FlowsOf(pinglist);
  std::vector<double> rates;
  std::vector<ProbeFlow> probe_flows;
  for (auto& [flow, rate] : flows) {
    probe_flows.push_back(std::move(flow));
    rates.push_back(rate);
  }
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  const absl::Duration window = absl::Milliseconds(pinglist.window_ms());
  const absl::Duration timeout = absl::Milliseconds(pinglist.timeout_ms());
  if (windows_ != nullptr && (window != absl::Milliseconds(pinglist_.window_ms()) ||
                              timeout != timeout_)) {
    // The old windows cannot continue under another length: close them now; what is
    // in flight for them is forgotten.
    for (auto& [seq, pending] : pending_) pending.transport->Forget(seq);
    pending_.clear();
    for (weft::v1::ProbeWindow& w : windows_->TakeAll(pinglist_.version())) {
      closed_.push_back(std::move(w));
      closed_unannounced_ = true;  // the sender, woken below, announces them
    }
    windows_.reset();
  }
  // Windows align to the epoch on the window grid, so every node's windows line up.
  if (windows_ == nullptr) windows_ = std::make_unique<ProbeWindows>(window, absl::UnixEpoch());
  timeout_ = timeout;
  pinglist_ = pinglist;
  flows_ = std::move(probe_flows);
  scheduler_ = std::make_unique<ProbeScheduler>(rates, options_.max_probes_per_second, now);
  scheduler_->SetRateScale(cpu_budget_.scale());
  logged_errors_.clear();
  ++changes_;
  rate_.Set(scheduler_->total_rate());
  version_.Set(static_cast<double>(pinglist.version()));
  WEFT_LOG(INFO) << "pinglist applied node=" << options_.node_name
                 << " version=" << pinglist.version() << " peers=" << pinglist.peers_size()
                 << " flows=" << flows_.size() << " probes_per_s=" << scheduler_->total_rate();
  return absl::OkStatus();
}

std::vector<weft::v1::ProbeWindow> Prober::TakeWindows(absl::Time* closed_through) {
  absl::MutexLock lock(&mu_);
  std::vector<weft::v1::ProbeWindow> out;
  out.swap(closed_);
  if (closed_through != nullptr) *closed_through = closed_through_;
  return out;
}

uint64_t Prober::pinglist_version() const {
  absl::MutexLock lock(&mu_);
  return pinglist_.version();
}

double Prober::scheduled_rate() const {
  absl::MutexLock lock(&mu_);
  return scheduler_ == nullptr ? 0 : scheduler_->total_rate();
}

size_t Prober::in_flight() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

size_t Prober::in_flight(uint16_t source_port) const {
  absl::MutexLock lock(&mu_);
  size_t count = 0;
  for (const auto& [seq, pending] : pending_) count += pending.flow.source_port == source_port;
  return count;
}

ProbeTransport* Prober::TransportFor(const ProbeFlow& flow) const {
  if (flow.transport != weft::v1::PROBE_TRANSPORT_RDMA_UD) return udp_;
  auto it = rdma_ud_.find(flow.source_nic);
  if (it != rdma_ud_.end()) return it->second;
  if (flow.source_nic.empty() && rdma_ud_.size() == 1) return rdma_ud_.begin()->second;
  return nullptr;
}

void Prober::AddCpu(double seconds) {
  if (seconds <= 0) return;
  cpu_seconds_.Increment(seconds);
  absl::MutexLock lock(&mu_);
  cpu_total_ += seconds;
}

void Prober::ExpireLocked(absl::Time now) {
  // Deadlines grow with seq (one timeout for all), so the expired ones come first.
  for (auto it = pending_.begin(); it != pending_.end() && it->second.deadline <= now;) {
    Pending& p = it->second;
    p.transport->Forget(it->first);
    if (p.measured.has_value()) {
      // ACK1 came, ACK2 did not: the responder's userspace estimate stands.
      windows_->Answered(p.flow, p.sent_at, *p.measured);
      answered_.Increment();
    } else {
      windows_->Lost(p.flow, p.sent_at);
      lost_.Increment();
    }
    it = pending_.erase(it);
  }
}

bool Prober::CloseWindowsLocked(absl::Time now) {
  if (windows_ == nullptr) return false;
  // A window is complete once every probe sent in it has had its timeout (ExpireLocked
  // resolved them first).
  const absl::Time resolved_before = now - timeout_;
  bool closed = false;
  for (weft::v1::ProbeWindow& w : windows_->TakeClosed(resolved_before, pinglist_.version())) {
    closed_.push_back(std::move(w));
    closed = true;
  }
  closed_through_ = std::max(closed_through_, resolved_before);
  return closed;
}

void Prober::SendLoop() {
  double cpu_mark = ThreadCpuSeconds();
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    const absl::Time now = clock_->Now();
    ExpireLocked(now);
    if (CloseWindowsLocked(now)) closed_unannounced_ = true;
    if (closed_unannounced_ && options_.on_windows_closed) {
      closed_unannounced_ = false;
      // Out of the lock: the listener may take its own and call TakeWindows later.
      mu_.Unlock();
      options_.on_windows_closed();
      mu_.Lock();
      continue;  // the world may have changed meanwhile: look again
    }
    // Send every probe that is due.
    while (scheduler_ != nullptr && !scheduler_->empty()) {
      auto [index, due] = scheduler_->Next();
      if (due > now + options_.send_ahead) break;
      const ProbeFlow& flow = flows_[index];
      ProbeTransport* transport = TransportFor(flow);
      const uint64_t seq = next_seq_++;
      absl::Status sent = transport == nullptr
                              ? absl::FailedPreconditionError(
                                    absl::StrCat("rdma_ud probing is unavailable from NIC '",
                                                 flow.source_nic,
                                                 "' (no UD responder on that RDMA device)"))
                              : transport->Send(flow, seq);
      scheduler_->Sent(index, now);
      if (!sent.ok()) {
        send_errors_.Increment();
        windows_->Failed(flow, now, std::string(sent.message()));
        if (logged_errors_.insert(flow.ToString()).second) {
          WEFT_LOG(WARNING) << "cannot probe flow=\"" << flow.ToString() << "\" error=\""
                            << sent.message() << "\"";
        }
        continue;
      }
      sent_.Increment();
      windows_->Sent(flow, now);
      pending_[seq] = Pending{flow, transport, now, now + timeout_, std::nullopt};
    }
    // The CPU budget (real CPU over real time: a cost, not the schedule).
    const double cpu_now = ThreadCpuSeconds();
    cpu_seconds_.Increment(std::max(0.0, cpu_now - cpu_mark));
    cpu_total_ += std::max(0.0, cpu_now - cpu_mark);
    cpu_mark = cpu_now;
    const double scale = cpu_budget_.Update(cpu_total_, absl::Now());
    if (scheduler_ != nullptr && scale != scheduler_->rate_scale()) {
      WEFT_LOG(WARNING) << "prober over its CPU budget node=" << options_.node_name
                        << " cpu_share=" << cpu_budget_.last_share()
                        << " max=" << options_.max_cpu_share << " rate_scale=" << scale;
      scheduler_->SetRateScale(scale);
      rate_.Set(scheduler_->total_rate());
    }

    // Sleep until the next probe, timeout or window end, or a new pinglist.
    absl::Time wake = absl::InfiniteFuture();
    if (scheduler_ != nullptr && !scheduler_->empty()) wake = scheduler_->Next().second;
    if (!pending_.empty()) wake = std::min(wake, pending_.begin()->second.deadline);
    if (windows_ != nullptr) {
      // The next close: the end of the window that holds `now - timeout`, plus the
      // timeout (not the end of the window that holds `now`: that would leave the
      // previous one to whichever probe comes next).
      const absl::Duration window = absl::Milliseconds(pinglist_.window_ms());
      const absl::Time resolved_before = now - timeout_;
      absl::Duration into_window;
      absl::IDivDuration(resolved_before - absl::UnixEpoch(), window, &into_window);
      wake = std::min(wake, resolved_before - into_window + window + timeout_);
    }
    const uint64_t changes = changes_;
    auto woken = [this, changes]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || changes_ != changes;
    };
    if (wake == absl::InfiniteFuture()) {
      // Nothing scheduled: wait for a pinglist without holding a wait on the clock,
      // which a test stepping the clock would otherwise see as a deadline.
      mu_.Await(absl::Condition(&woken));
    } else {
      clock_->AwaitWithDeadline(&mu_, absl::Condition(&woken), wake);
    }
  }
}

void Prober::ReceiveLoop(ProbeTransport* transport) {
  double cpu_mark = ThreadCpuSeconds();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) break;
    }
    std::vector<ProbeMeasurement> replies = transport->Receive(kReceivePoll);
    {
      absl::MutexLock lock(&mu_);
      for (ProbeMeasurement& m : replies) {
        auto it = pending_.find(m.seq);
        if (it == pending_.end()) continue;  // timed out already, or another list's
        if (!m.final) {
          it->second.measured = std::move(m);
          continue;
        }
        windows_->Answered(it->second.flow, it->second.sent_at, m);
        answered_.Increment();
        pending_.erase(it);
      }
    }
    const double cpu_now = ThreadCpuSeconds();
    AddCpu(cpu_now - cpu_mark);
    cpu_mark = cpu_now;
  }
}

}  // namespace weft::agent::probe
