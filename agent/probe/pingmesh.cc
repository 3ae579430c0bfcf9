#include "agent/probe/pingmesh.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

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
                                                           prometheus::Registry* registry) {
  const weft::v1::ProbeConfig& probe = config.probe();
  if (probe.udp_port() == 0) return std::unique_ptr<Pingmesh>();
  absl::StatusOr<std::unique_ptr<UdpProber>> udp = UdpProber::Create();
  if (!udp.ok()) {
    return absl::UnavailableError(absl::StrCat("pingmesh prober: ", udp.status().message()));
  }
  absl::StatusOr<std::unique_ptr<UdpResponder>> responder =
      UdpResponder::Start(probe.bind_address(), static_cast<uint16_t>(probe.udp_port()));
  if (!responder.ok()) {
    WEFT_LOG(ERROR) << "pingmesh: not answering probes, other nodes will count this one's "
                       "probes lost: "
                    << responder.status().ToString();
  } else {
    WEFT_LOG(INFO) << "pingmesh responder listening udp=" << probe.bind_address() << ":"
                   << (*responder)->port();
  }
  return std::unique_ptr<Pingmesh>(
      new Pingmesh(probe, *std::move(udp),
                   responder.ok() ? *std::move(responder) : std::unique_ptr<UdpResponder>(),
                   clock, registry, config.node_name()));
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
      responder_(std::move(responder)) {}

Pingmesh::~Pingmesh() { Stop(); }

void Pingmesh::Start(const std::vector<weft::v1::Nic>& nics) {
  if (prober_ != nullptr) return;
  max_probes_per_second_ =
      ProbeRateCap(config_.max_probes_per_second(), config_.max_nic_share(), nics);
  ProberOptions options;
  options.node_name = node_name_;
  options.max_probes_per_second = max_probes_per_second_;
  options.max_cpu_share = config_.max_cpu_share();
  prober_ = std::make_unique<Prober>(udp_.get(), nullptr, clock_, options, registry_);
  prober_->Start();
  WEFT_LOG(INFO) << "pingmesh prober ready node=" << node_name_
                 << " max_probes_per_s=" << max_probes_per_second_
                 << " max_cpu_share=" << config_.max_cpu_share();
}

void Pingmesh::Stop() {
  if (prober_ != nullptr) prober_->Stop();
}

absl::Status Pingmesh::Apply(const weft::v1::Pinglist& pinglist) {
  if (prober_ == nullptr) {
    refused_.Increment();
    return absl::FailedPreconditionError("pingmesh: the prober has not started");
  }
  absl::Status applied = prober_->Apply(pinglist);
  (applied.ok() ? applied_ : refused_).Increment();
  return applied;
}

}  // namespace weft::agent::probe
