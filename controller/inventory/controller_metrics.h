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
//   weft_controller_health_rule_firings_total{rule}                      counter
//   weft_controller_health_findings{rule}                                gauge
//   weft_controller_auto_drains_total                                    counter
//   weft_controller_auto_undrains_total                                  counter
//
// Per rack (one ToR switch), labelled {pod, rack}; sums over the rack's reporting
// nodes, refreshed by the inventory's sweep; a rack's series go when its last node
// does:
//   weft_rack_nodes{pod,rack,state}                                      gauge
//   weft_rack_tx_bytes_per_second, weft_rack_rx_bytes_per_second         gauge
//   weft_rack_ecn_marked_packets_per_second                              gauge
//   weft_rack_cnp_sent_per_second, weft_rack_cnp_handled_per_second      gauge
//   weft_rack_pfc_pause_share{direction="rx|tx"} (0..1, most-paused NIC) gauge
//   weft_rack_retransmissions_per_second                                 gauge
//     (packet_seq_err + local_ack_timeout_err + out_of_sequence)
//
// Thread-safe: prometheus-cpp metrics are atomic and Family::Add locks.
#ifndef WEFT_CONTROLLER_INVENTORY_CONTROLLER_METRICS_H_
#define WEFT_CONTROLLER_INVENTORY_CONTROLLER_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
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
  // weft_controller_health_rule_firings_total{rule}: a rule started firing on a NIC.
  void HealthRuleFired(absl::string_view rule);
  // weft_controller_health_findings{rule}: how many NICs the rule fires on now.
  void SetActiveFindings(absl::string_view rule, int64_t count);
  void NodeAutoDrained();
  void NodeAutoUndrained();
  // Sets the weft_rack_* gauges to `racks` and removes the series of racks no longer
  // in it.
  void SetRackStatus(const weft::v1::ListRacksResponse& racks);

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
  CounterFamily& rule_firings_;
  prometheus::Family<prometheus::Gauge>& active_findings_;
  prometheus::Counter& auto_drains_;
  prometheus::Counter& auto_undrains_;

  using GaugeFamily = prometheus::Family<prometheus::Gauge>;
  GaugeFamily& rack_nodes_;
  GaugeFamily& rack_tx_bytes_;
  GaugeFamily& rack_rx_bytes_;
  GaugeFamily& rack_ecn_marked_;
  GaugeFamily& rack_cnp_sent_;
  GaugeFamily& rack_cnp_handled_;
  GaugeFamily& rack_pfc_pause_share_;
  GaugeFamily& rack_retransmissions_;

  // The series of one rack, so they can be removed when the rack goes.
  struct RackSeries {
    std::array<prometheus::Gauge*, 4> nodes{};  // healthy, degraded, down, drained
    prometheus::Gauge* tx_bytes = nullptr;
    prometheus::Gauge* rx_bytes = nullptr;
    prometheus::Gauge* ecn_marked = nullptr;
    prometheus::Gauge* cnp_sent = nullptr;
    prometheus::Gauge* cnp_handled = nullptr;
    prometheus::Gauge* pfc_rx_pause_share = nullptr;
    prometheus::Gauge* pfc_tx_pause_share = nullptr;
    prometheus::Gauge* retransmissions = nullptr;
  };
  RackSeries AddRackSeries(const std::string& pod, const std::string& rack);
  void RemoveRackSeries(const RackSeries& series);

  absl::Mutex racks_mu_;
  std::map<std::pair<std::string, std::string>, RackSeries> racks_
      ABSL_GUARDED_BY(racks_mu_);
};

// "healthy", "degraded", "down", "drained" ("unspecified" otherwise): the label value
// used for a NodeState in weft_controller_nodes and node_state_changes_total.
std::string NodeStateLabel(weft::v1::NodeState state);

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_INVENTORY_CONTROLLER_METRICS_H_
