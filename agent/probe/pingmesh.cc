#include "agent/probe/pingmesh.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "prometheus/gauge.h"

namespace weft::agent::probe {

double ProbeRateCap(double max_probes_per_second, double max_nic_share,
                    const std::vector<weft::v1::Nic>& nics) {
  double cap = max_probes_per_second;
  for (const weft::v1::Nic& nic : nics) {
    if (nic.speed_mbps() == 0) continue;  // unknown speed: no bound from it
    const double bytes_per_s = nic.speed_mbps() * 1e6 / 8;
    cap = std::min(cap, max_nic_share * bytes_per_s / kWireBytesPerProbe);
  }
  return cap;
}

absl::StatusOr<std::unique_ptr<Pingmesh>> Pingmesh::Create(const weft::v1::AgentConfig& config,
                                                           const Clock* clock,
                                                           prometheus::Registry* registry,
                                                           std::unique_ptr<rdma::Verbs> verbs) {
  const weft::v1::ProbeConfig& probe = config.probe();
  if (probe.udp_port() == 0) return std::unique_ptr<Pingmesh>();
  absl::StatusOr<std::unique_ptr<UdpProber>> udp = UdpProber::Create();
  if (!udp.ok()) {
    return absl::UnavailableError(absl::StrCat("pingmesh prober: ", udp.status().message()));
  }
  absl::StatusOr<std::unique_ptr<UdpResponder>> responder =
      UdpResponder::Start(probe.bind_address(), static_cast<uint16_t>(probe.udp_port()));
  if (!responder.ok()) {
    // Not fatal: the node's telemetry and tunables matter more than its probes. The
    // agent reports port 0, and the controller leaves the node out of the pingmesh.
    WEFT_LOG(ERROR) << "pingmesh: NOT answering probes: cannot bind UDP port "
                    << probe.udp_port() << " on " << probe.bind_address() << " ("
                    << responder.status().message()
                    << "); this node is left out of the pingmesh. Is another weft-agent on "
                       "this host using the port? Give each agent its own probe.udp_port "
                       "(--probe_port N), or 0 to turn probing off";
  } else {
    WEFT_LOG(INFO) << "pingmesh responder listening udp=" << probe.bind_address() << ":"
                   << (*responder)->port();
  }
  std::unique_ptr<Pingmesh> pingmesh(
      new Pingmesh(probe, *std::move(udp),
                   responder.ok() ? *std::move(responder) : std::unique_ptr<UdpResponder>(),
                   clock, registry, config.node_name()));
  pingmesh->verbs_ = std::move(verbs);
  return pingmesh;
}

Pingmesh::Pingmesh(const weft::v1::ProbeConfig& config, std::unique_ptr<UdpProber> udp,
                   std::unique_ptr<UdpResponder> responder, const Clock* clock,
                   prometheus::Registry* registry, const std::string& node_name)
    : config_(config),
      node_name_(node_name),
      clock_(clock),
      registry_(registry),
      applied_(prometheus::BuildCounter()
                   .Name("weft_agent_pinglists_total")
                   .Help("Pinglists received from the controller, by outcome")
                   .Register(*registry)
                   .Add({{"node", node_name}, {"result", "applied"}})),
      refused_(prometheus::BuildCounter()
                   .Name("weft_agent_pinglists_total")
                   .Help("Pinglists received from the controller, by outcome")
                   .Register(*registry)
                   .Add({{"node", node_name}, {"result", "refused"}})),
      udp_(std::move(udp)),
      responder_(std::move(responder)) {
  prometheus::BuildGauge()
      .Name("weft_agent_pingmesh_responder_up")
      .Help("1 when the pingmesh responder answers on its UDP port, 0 when it could not "
            "bind it (the agent's log says why)")
      .Register(*registry)
      .Add({{"node", node_name}, {"port", std::to_string(config.udp_port())}})
      .Set(responder_ != nullptr ? 1 : 0);
}

Pingmesh::~Pingmesh() {
  Stop();
  tracer_.reset();  // before the UdpProber it sends through
  prober_.reset();
  ud_.clear();  // before the Verbs they use
}

namespace {

// The lowest-index RoCE v2 IPv4-mapped GID of `nic`, if any.
std::optional<std::pair<uint32_t, rdma::Gid>> RoceV2Ipv4Gid(const weft::v1::Nic& nic) {
  std::optional<std::pair<uint32_t, rdma::Gid>> best;
  for (const weft::v1::GidEntry& entry : nic.gids()) {
    if (entry.type() != weft::v1::GID_TYPE_ROCE_V2) continue;
    absl::StatusOr<rdma::Gid> gid = rdma::Gid::Parse(entry.gid());
    if (!gid.ok() || !gid->IsIpv4Mapped()) continue;
    if (!best.has_value() || entry.index() < best->first) best = {entry.index(), *gid};
  }
  return best;
}

}  // namespace

uint32_t Pingmesh::ud_qpn(const std::string& device) const {
  auto it = ud_.find(device);
  return it == ud_.end() ? 0 : it->second->qp_num();
}

void Pingmesh::Start(const std::vector<weft::v1::Nic>& nics,
                     std::function<void()> on_windows_closed) {
  if (prober_ != nullptr) return;
  max_probes_per_second_ =
      ProbeRateCap(config_.max_probes_per_second(), config_.max_nic_share(), nics);
  ProberOptions options;
  options.node_name = node_name_;
  options.max_probes_per_second = max_probes_per_second_;
  options.max_cpu_share = config_.max_cpu_share();
  options.on_windows_closed = std::move(on_windows_closed);
  std::map<std::string, ProbeTransport*> ud;
  for (const weft::v1::Nic& nic : verbs_ != nullptr ? nics : std::vector<weft::v1::Nic>{}) {
    const std::optional<std::pair<uint32_t, rdma::Gid>> gid = RoceV2Ipv4Gid(nic);
    if (nic.link_layer() != "Ethernet" || nic.state() != weft::v1::PORT_STATE_ACTIVE ||
        !gid.has_value() || ud_.count(nic.device()) != 0) {
      continue;
    }
    UdTransportOptions ud_options;
    ud_options.device = nic.device();
    ud_options.port = static_cast<uint8_t>(nic.port());
    ud_options.sgid_index = static_cast<uint8_t>(gid->first);
    ud_options.local_gid = gid->second;
    absl::StatusOr<std::unique_ptr<UdProbeTransport>> transport =
        UdProbeTransport::Create(verbs_.get(), ud_options);
    if (!transport.ok()) {
      WEFT_LOG(WARNING) << "pingmesh: no UD probing on device=" << nic.device() << ": "
                        << transport.status().message();
      continue;
    }
    WEFT_LOG(INFO) << "pingmesh UD responder device=" << nic.device()
                   << " qpn=" << (*transport)->qp_num()
                   << " timestamps=" << ((*transport)->hardware_timestamps() ? "nic" : "user");
    ud[nic.device()] = transport->get();
    ud_[nic.device()] = *std::move(transport);
  }
  prober_ = std::make_unique<Prober>(udp_.get(), std::move(ud), clock_, options, registry_);
  prober_->Start();
  // A config made in code without the trace knobs (traces_per_second 0) traces nothing.
  if (config_.traces_per_second() > 0) {
    PathTracerOptions trace;
    trace.traces_per_second = config_.traces_per_second();
    trace.interval = absl::Seconds(config_.trace_interval_s());
    if (config_.trace_max_hops() > 0) trace.max_hops = static_cast<int>(config_.trace_max_hops());
    tracer_ = std::make_unique<PathTracer>(udp_.get(), clock_, trace, registry_, node_name_);
    tracer_->Start();
  }
  WEFT_LOG(INFO) << "pingmesh prober ready node=" << node_name_
                 << " max_probes_per_s=" << max_probes_per_second_
                 << " max_cpu_share=" << config_.max_cpu_share();
}

void Pingmesh::Stop() {
  if (tracer_ != nullptr) tracer_->Stop();
  if (prober_ != nullptr) prober_->Stop();
}

std::vector<weft::v1::ProbeWindow> Pingmesh::TakeWindows(absl::Time* closed_through) {
  std::vector<weft::v1::ProbeWindow> windows = prober_->TakeWindows(closed_through);
  if (tracer_ != nullptr) {
    for (const weft::v1::ProbeWindow& window : windows) {
      if (window.lost() > 0) tracer_->TraceSoon(window);
    }
  }
  return windows;
}

std::vector<weft::v1::ProbePathTrace> Pingmesh::TakeTraces() {
  if (tracer_ == nullptr) return {};
  return tracer_->TakeTraces();
}

absl::Status Pingmesh::Apply(const weft::v1::Pinglist& pinglist) {
  if (prober_ == nullptr) {
    refused_.Increment();
    return absl::FailedPreconditionError("pingmesh: the prober has not started");
  }
  absl::Status applied = prober_->Apply(pinglist);
  (applied.ok() ? applied_ : refused_).Increment();
  if (applied.ok() && tracer_ != nullptr) {
    std::vector<ProbeFlow> flows;
    for (auto& [flow, rate] : FlowsOf(pinglist)) flows.push_back(std::move(flow));
    tracer_->SetFlows(flows);
  }
  return applied;
}

}  // namespace weft::agent::probe
