// ControllerMetrics: the controller's Prometheus families, registered on an injected
// prometheus::Registry (served at /metrics by common/metrics_server.h). The inventory
// and the gRPC services record events here; tests read the values back with
// Registry::Collect(). All names are part of the operator interface:
//
//   weft_controller_nodes{state="healthy|degraded|down|drained"}        gauge
//   weft_controller_agent_streams                                        gauge
//   weft_controller_registrations_total                                  counter
//   weft_controller_sessions_fenced_total                                counter
//   weft_controller_telemetry_batches_total                              counter
//   weft_controller_telemetry_samples_total                              counter
//   weft_controller_telemetry_rejected_total{reason}                     counter
//   weft_controller_telemetry_samples_dropped_total{reason="unknown_nic"} counter
//   weft_controller_streams_rejected_total{reason}                       counter
//   weft_controller_node_state_changes_total{to}                         counter
//   weft_controller_drains_total                                         counter
//   weft_controller_desired_state_acks_total{result="ack|nack"}          counter
//
// Thread-safe: prometheus-cpp metrics are atomic and Family::Add locks.
#ifndef WEFT_CONTROLLER_CONTROLLER_METRICS_H_
#define WEFT_CONTROLLER_CONTROLLER_METRICS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/admin.pb.h"

namespace weft::controller {

class ControllerMetrics {
 public:
  // Registers every family on `registry`, which must outlive this object.
  explicit ControllerMetrics(prometheus::Registry& registry);

  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  // weft_controller_nodes{state}; NODE_STATE_UNSPECIFIED is ignored.
  void SetNodeCount(weft::v1::NodeState state, int64_t count);
  void StreamOpened();
  void StreamClosed();
  void RegistrationAccepted();
  void SessionFenced();
  void TelemetryAccepted(int64_t samples);
  // `reason` is a short snake_case label value, e.g. "superseded".
  void TelemetryRejected(absl::string_view reason);
  void SamplesDropped(absl::string_view reason, int64_t samples);
  void StreamRejected(absl::string_view reason);
  void NodeStateChanged(weft::v1::NodeState to);
  void NodeDrained();
  void DesiredStateAckReceived(bool accepted);

 private:
  using CounterFamily = prometheus::Family<prometheus::Counter>;

  // The counter of `family` labelled {label=value}; Family::Add returns the existing
  // one after the first call.
  static prometheus::Counter& Labelled(CounterFamily& family, const std::string& label,
                                       absl::string_view value);

  prometheus::Family<prometheus::Gauge>& nodes_;
  prometheus::Gauge& agent_streams_;
  prometheus::Counter& registrations_;
  prometheus::Counter& sessions_fenced_;
  prometheus::Counter& telemetry_batches_;
  prometheus::Counter& telemetry_samples_;
  CounterFamily& telemetry_rejected_;
  CounterFamily& samples_dropped_;
  CounterFamily& streams_rejected_;
  CounterFamily& state_changes_;
  prometheus::Counter& drains_;
  CounterFamily& acks_;
};

// "healthy", "degraded", "down", "drained" ("unspecified" otherwise): the label value
// used for a NodeState in weft_controller_nodes and node_state_changes_total.
std::string NodeStateLabel(weft::v1::NodeState state);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_CONTROLLER_METRICS_H_
