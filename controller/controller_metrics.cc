#include "controller/controller_metrics.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"

namespace weft::controller {
namespace {

using weft::v1::NodeState;

constexpr NodeState kReportedStates[] = {
    weft::v1::NODE_STATE_HEALTHY, weft::v1::NODE_STATE_DEGRADED,
    weft::v1::NODE_STATE_DOWN, weft::v1::NODE_STATE_DRAINED};

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
                .Register(registry)) {
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

}  // namespace weft::controller
