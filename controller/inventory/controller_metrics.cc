#include "controller/inventory/controller_metrics.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "controller/health/health_rules.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"

namespace weft::controller {
namespace {

using weft::v1::NodeState;

constexpr NodeState kReportedStates[] = {
    weft::v1::NODE_STATE_HEALTHY, weft::v1::NODE_STATE_DEGRADED,
    weft::v1::NODE_STATE_DOWN, weft::v1::NODE_STATE_DRAINED};

constexpr double kBytesPerGigabit = 1e9 / 8;

prometheus::Family<prometheus::Gauge>& RackGauge(prometheus::Registry& registry,
                                                 const std::string& name,
                                                 const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

}  // namespace

std::string NodeStateLabel(NodeState state) {
  std::string name = weft::v1::NodeState_Name(state);
  constexpr absl::string_view kPrefix = "NODE_STATE_";
  if (absl::StartsWith(name, kPrefix)) name.erase(0, kPrefix.size());
  if (name.empty()) name = "unspecified";
  return absl::AsciiStrToLower(name);
}

ControllerMetrics::ControllerMetrics(prometheus::Registry& registry)
    : nodes_(prometheus::BuildGauge()
                 .Name("weft_controller_nodes")
                 .Help("Registered nodes by state.")
                 .Register(registry)),
      agent_streams_(prometheus::BuildGauge()
                         .Name("weft_controller_agent_streams")
                         .Help("Open agent Connect streams.")
                         .Register(registry)
                         .Add({})),
      registrations_(prometheus::BuildCounter()
                         .Name("weft_controller_registrations_total")
                         .Help("Accepted Register calls.")
                         .Register(registry)
                         .Add({})),
      sessions_fenced_(prometheus::BuildCounter()
                           .Name("weft_controller_sessions_fenced_total")
                           .Help("Agent sessions superseded by a newer session of the "
                                 "same node.")
                           .Register(registry)
                           .Add({})),
      telemetry_batches_(prometheus::BuildCounter()
                             .Name("weft_controller_telemetry_batches_total")
                             .Help("Telemetry batches accepted.")
                             .Register(registry)
                             .Add({})),
      telemetry_samples_(prometheus::BuildCounter()
                             .Name("weft_controller_telemetry_samples_total")
                             .Help("NIC samples accepted (in accepted batches).")
                             .Register(registry)
                             .Add({})),
      telemetry_rejected_(prometheus::BuildCounter()
                              .Name("weft_controller_telemetry_rejected_total")
                              .Help("Telemetry batches rejected, by reason.")
                              .Register(registry)),
      samples_dropped_(prometheus::BuildCounter()
                           .Name("weft_controller_telemetry_samples_dropped_total")
                           .Help("NIC samples dropped from accepted batches, by reason.")
                           .Register(registry)),
      streams_rejected_(prometheus::BuildCounter()
                            .Name("weft_controller_streams_rejected_total")
                            .Help("Agent Connect streams ended by the controller for a "
                                  "protocol or session error, by reason.")
                            .Register(registry)),
      state_changes_(prometheus::BuildCounter()
                         .Name("weft_controller_node_state_changes_total")
                         .Help("Node state transitions, by the state entered.")
                         .Register(registry)),
      drains_(prometheus::BuildCounter()
                  .Name("weft_controller_drains_total")
                  .Help("Nodes put into DRAINED by an operator.")
                  .Register(registry)
                  .Add({})),
      acks_(prometheus::BuildCounter()
                .Name("weft_controller_desired_state_acks_total")
                .Help("DesiredStateAck messages received, by result (ack or nack).")
                .Register(registry)),
      rule_firings_(prometheus::BuildCounter()
                        .Name("weft_controller_health_rule_firings_total")
                        .Help("Times a health rule started firing on a NIC (pingmesh "
                              "rules: on a node), by rule.")
                        .Register(registry)),
      active_findings_(prometheus::BuildGauge()
                           .Name("weft_controller_health_findings")
                           .Help("NICs (pingmesh rules: components) of reporting nodes a "
                                 "health rule fires on now, by rule.")
                           .Register(registry)),
      auto_drains_(prometheus::BuildCounter()
                       .Name("weft_controller_auto_drains_total")
                       .Help("Nodes drained by the controller's auto_drain policy.")
                       .Register(registry)
                       .Add({})),
      auto_undrains_(prometheus::BuildCounter()
                         .Name("weft_controller_auto_undrains_total")
                         .Help("Auto-drained nodes undrained by the controller after "
                               "a clean recovery window.")
                         .Register(registry)
                         .Add({})),
      rack_nodes_(RackGauge(registry, "weft_rack_nodes", "Nodes of the rack by state.")),
      rack_tx_bytes_(RackGauge(registry, "weft_rack_tx_bytes_per_second",
                               "Bytes per second the rack's NICs transmit.")),
      rack_rx_bytes_(RackGauge(registry, "weft_rack_rx_bytes_per_second",
                               "Bytes per second the rack's NICs receive.")),
      rack_ecn_marked_(RackGauge(registry, "weft_rack_ecn_marked_packets_per_second",
                                 "ECN-marked RoCE packets per second the rack's NICs "
                                 "receive (np_ecn_marked_roce_packets).")),
      rack_cnp_sent_(RackGauge(registry, "weft_rack_cnp_sent_per_second",
                               "CNPs per second the rack's NICs send (np_cnp_sent).")),
      rack_cnp_handled_(RackGauge(registry, "weft_rack_cnp_handled_per_second",
                                  "CNPs per second the rack's NICs act on "
                                  "(rp_cnp_handled).")),
      rack_pfc_pause_share_(RackGauge(
          registry, "weft_rack_pfc_pause_share",
          "Share of time (0..1) the most-paused PFC priority of the rack's most-paused NIC "
          "spent paused, per direction: rx = the NIC was paused by its switch, tx = the NIC "
          "paused its switch.")),
      rack_retransmissions_(RackGauge(registry, "weft_rack_retransmissions_per_second",
                                      "packet_seq_err + local_ack_timeout_err + "
                                      "out_of_sequence per second over the rack's "
                                      "NICs.")) {
  // Series that exist from the start, so dashboards and alerts see 0 rather than
  // nothing.
  for (NodeState state : kReportedStates) {
    nodes_.Add({{"state", NodeStateLabel(state)}}).Set(0);
    state_changes_.Add({{"to", NodeStateLabel(state)}});
  }
  for (const char* reason : {"unknown_node", "superseded", "ungranted_session", "no_hello"}) {
    telemetry_rejected_.Add({{"reason", reason}});
  }
  samples_dropped_.Add({{"reason", "unknown_nic"}});
  acks_.Add({{"result", "ack"}});
  acks_.Add({{"result", "nack"}});
  for (HealthRule rule : kAllHealthRules) {
    const std::string name(HealthRuleName(rule));
    rule_firings_.Add({{"rule", name}});
    active_findings_.Add({{"rule", name}}).Set(0);
  }
}

prometheus::Counter& ControllerMetrics::Labelled(CounterFamily& family,
                                                 const std::string& label,
                                                 absl::string_view value) {
  return family.Add({{label, std::string(value)}});
}

void ControllerMetrics::SetNodeCount(NodeState state, int64_t count) {
  if (state == weft::v1::NODE_STATE_UNSPECIFIED) return;
  nodes_.Add({{"state", NodeStateLabel(state)}}).Set(static_cast<double>(count));
}

void ControllerMetrics::StreamOpened() { agent_streams_.Increment(); }
void ControllerMetrics::StreamClosed() { agent_streams_.Decrement(); }
void ControllerMetrics::RegistrationAccepted() { registrations_.Increment(); }
void ControllerMetrics::SessionFenced() { sessions_fenced_.Increment(); }

void ControllerMetrics::TelemetryAccepted(int64_t samples) {
  telemetry_batches_.Increment();
  telemetry_samples_.Increment(static_cast<double>(samples));
}

void ControllerMetrics::TelemetryRejected(absl::string_view reason) {
  Labelled(telemetry_rejected_, "reason", reason).Increment();
}

void ControllerMetrics::SamplesDropped(absl::string_view reason, int64_t samples) {
  Labelled(samples_dropped_, "reason", reason).Increment(static_cast<double>(samples));
}

void ControllerMetrics::StreamRejected(absl::string_view reason) {
  Labelled(streams_rejected_, "reason", reason).Increment();
}

void ControllerMetrics::NodeStateChanged(NodeState to) {
  Labelled(state_changes_, "to", NodeStateLabel(to)).Increment();
}

void ControllerMetrics::NodeDrained() { drains_.Increment(); }

void ControllerMetrics::DesiredStateAckReceived(bool accepted) {
  Labelled(acks_, "result", accepted ? "ack" : "nack").Increment();
}

void ControllerMetrics::HealthRuleFired(absl::string_view rule) {
  Labelled(rule_firings_, "rule", rule).Increment();
}

void ControllerMetrics::SetActiveFindings(absl::string_view rule, int64_t count) {
  active_findings_.Add({{"rule", std::string(rule)}}).Set(static_cast<double>(count));
}

void ControllerMetrics::NodeAutoDrained() { auto_drains_.Increment(); }
void ControllerMetrics::NodeAutoUndrained() { auto_undrains_.Increment(); }

ControllerMetrics::RackSeries ControllerMetrics::AddRackSeries(const std::string& pod,
                                                               const std::string& rack) {
  const prometheus::Labels labels = {{"pod", pod}, {"rack", rack}};
  RackSeries series;
  for (size_t i = 0; i < series.nodes.size(); ++i) {
    prometheus::Labels with_state = labels;
    with_state["state"] = NodeStateLabel(kReportedStates[i]);
    series.nodes[i] = &rack_nodes_.Add(with_state);
  }
  series.tx_bytes = &rack_tx_bytes_.Add(labels);
  series.rx_bytes = &rack_rx_bytes_.Add(labels);
  series.ecn_marked = &rack_ecn_marked_.Add(labels);
  series.cnp_sent = &rack_cnp_sent_.Add(labels);
  series.cnp_handled = &rack_cnp_handled_.Add(labels);
  for (const char* direction : {"rx", "tx"}) {
    prometheus::Labels with_direction = labels;
    with_direction["direction"] = direction;
    (direction[0] == 'r' ? series.pfc_rx_pause_share : series.pfc_tx_pause_share) =
        &rack_pfc_pause_share_.Add(with_direction);
  }
  series.retransmissions = &rack_retransmissions_.Add(labels);
  return series;
}

void ControllerMetrics::RemoveRackSeries(const RackSeries& series) {
  for (prometheus::Gauge* gauge : series.nodes) rack_nodes_.Remove(gauge);
  rack_tx_bytes_.Remove(series.tx_bytes);
  rack_rx_bytes_.Remove(series.rx_bytes);
  rack_ecn_marked_.Remove(series.ecn_marked);
  rack_cnp_sent_.Remove(series.cnp_sent);
  rack_cnp_handled_.Remove(series.cnp_handled);
  rack_pfc_pause_share_.Remove(series.pfc_rx_pause_share);
  rack_pfc_pause_share_.Remove(series.pfc_tx_pause_share);
  rack_retransmissions_.Remove(series.retransmissions);
}

void ControllerMetrics::SetRackStatus(const weft::v1::ListRacksResponse& racks) {
  absl::MutexLock lock(&racks_mu_);
  std::set<std::pair<std::string, std::string>> present;
  for (const weft::v1::RackStatus& rack : racks.racks()) {
    const auto key = std::make_pair(rack.pod(), rack.rack());
    present.insert(key);
    auto it = racks_.find(key);
    if (it == racks_.end()) {
      it = racks_.emplace(key, AddRackSeries(rack.pod(), rack.rack())).first;
    }
    const RackSeries& series = it->second;
    const weft::v1::NodeCounts& n = rack.nodes();
    series.nodes[0]->Set(n.healthy());
    series.nodes[1]->Set(n.degraded());
    series.nodes[2]->Set(n.down());
    series.nodes[3]->Set(n.drained());
    const weft::v1::NodeRates& r = rack.rates();
    series.tx_bytes->Set(r.tx_gbps() * kBytesPerGigabit);
    series.rx_bytes->Set(r.rx_gbps() * kBytesPerGigabit);
    series.ecn_marked->Set(r.ecn_marked_per_s());
    series.cnp_sent->Set(r.cnp_sent_per_s());
    series.cnp_handled->Set(r.cnp_handled_per_s());
    series.pfc_rx_pause_share->Set(r.pfc_rx_pause_share());
    series.pfc_tx_pause_share->Set(r.pfc_tx_pause_share());
    series.retransmissions->Set(r.retransmissions_per_s());
  }
  for (auto it = racks_.begin(); it != racks_.end();) {
    if (present.count(it->first) > 0) {
      ++it;
      continue;
    }
    RemoveRackSeries(it->second);
    it = racks_.erase(it);
  }
}

}  // namespace weft::controller
