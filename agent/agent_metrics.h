// AgentMetrics: the agent's Prometheus series, registered on an injected registry
// (served at the agent's /metrics by common/metrics_server.h).
//
// Agent health:
//   weft_agent_telemetry_batches_sent_total      TelemetryBatch messages written
//   weft_agent_telemetry_send_errors_total       batches the stream refused
//   weft_agent_reconnects_total                  session attempts after a failure
//   weft_agent_registered                        1 while registered with a live stream
//   weft_agent_collection_errors_total{device}   NIC readings that failed
//   weft_agent_collection_duration_seconds       histogram of one collection's time
// Desired QoS / DCQCN state (agent/tunables/):
//   weft_agent_tunables_applied_version          desired-state version applied (0: none)
//   weft_agent_tunables_drift                    parameters differing from it, last check
//   weft_agent_desired_state_applies_total{result="ack|nack"}
// Per NIC, labels {node, device, port, netdev, pci}: one counter per hardware counter, named after
// the kernel's counter (weft_nic_port_xmit_bytes_total, weft_nic_np_cnp_sent_total,
// weft_nic_packet_seq_err_total, ... see kNicCounters in agent_metrics.cc), plus
//   weft_nic_pfc_pause_duration_seconds_total{direction="rx|tx", priority}
//   weft_nic_pfc_pause_frames_total{direction="rx|tx", priority}
//   weft_nic_missing_counters   counters the port lacks or cannot read (0: none)
// NIC counters are fed the increases counter_math computes, so they count what this
// agent observed since it started (wrap handled, resets skipped) rather than mirror the
// NIC's own total: Prometheus' rate() gives the same answer either way.
//
// Thread-safe.
#ifndef WEFT_AGENT_AGENT_METRICS_H_
#define WEFT_AGENT_AGENT_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/nic_backend.h"
#include "proto/weft/v1/node.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace weft::agent {

class AgentMetrics {
 public:
  // Registers every family on `registry`, which must outlive this object.
  AgentMetrics(prometheus::Registry& registry, std::string node_name);

  AgentMetrics(const AgentMetrics&) = delete;
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  void BatchSent() { batches_sent_.Increment(); }
  void SendError() { send_errors_.Increment(); }
  // A queued batch dropped because the stream was slower than collection.
  void TelemetryDropped() { telemetry_dropped_.Increment(); }
  void Reconnect() { reconnects_.Increment(); }
  // A controller message from a deposed leader (a lower epoch) was ignored.
  void ControllerMessageFenced() { messages_fenced_.Increment(); }
  void SetRegistered(bool registered) { registered_.Set(registered ? 1 : 0); }
  // One desired state answered: ACK (and now applied at `version`) or NACK.
  void DesiredStateAnswered(bool accepted, uint64_t applied_version) {
    (accepted ? applies_ack_ : applies_nack_).Increment();
    tunables_applied_version_.Set(static_cast<double>(applied_version));
  }
  void SetTunablesDrift(size_t drifted) { tunables_drift_.Set(static_cast<double>(drifted)); }
  void CollectionError(const std::string& device);

  // Creates the NIC's series at 0 (so rate() works from the first scrape).
  void AddNic(const std::string& device, uint32_t port);
  // The same, with the NIC's netdev and PCI address as labels of all its series.
  void AddNic(const weft::v1::Nic& nic);
  // How long one collection (read every NIC, compute rates) took.
  void ObserveCollection(absl::Duration duration) {
    collection_duration_.Observe(absl::ToDoubleSeconds(duration));
  }
  // Adds one interval's increases of the NIC's counters.
  void AddNicIncrease(const std::string& device, uint32_t port, const RawNicCounters& increase);
  // How many counters the port is expected to have and cannot report (RawNicReading's
  // missing_counters), at the last reading.
  void SetMissingCounters(const std::string& device, uint32_t port, size_t missing);

 private:
  struct PfcSeries {
    prometheus::Counter* rx_frames;
    prometheus::Counter* tx_frames;
    prometheus::Counter* rx_duration_us;
    prometheus::Counter* tx_duration_us;
  };
  struct NicSeries {
    prometheus::Labels labels;
    // In kNicCounters order; null until the port reports the counter (a counter the
    // port lacks is no series, never a 0).
    std::vector<prometheus::Counter*> counters;
    std::map<uint32_t, PfcSeries> pfc;           // by priority
    prometheus::Gauge* missing = nullptr;
  };

  NicSeries& SeriesFor(const std::string& device, uint32_t port) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PfcSeries& PfcSeriesFor(const std::string& device, uint32_t port, uint32_t priority,
                          NicSeries& nic) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string node_name_;
  prometheus::Counter& batches_sent_;
  prometheus::Counter& send_errors_;
  prometheus::Counter& telemetry_dropped_;
  prometheus::Counter& reconnects_;
  prometheus::Counter& messages_fenced_;
  prometheus::Gauge& registered_;
  prometheus::Gauge& tunables_applied_version_;
  prometheus::Gauge& tunables_drift_;
  prometheus::Family<prometheus::Counter>& applies_;
  prometheus::Counter& applies_ack_;
  prometheus::Counter& applies_nack_;
  prometheus::Family<prometheus::Counter>& collection_errors_;
  prometheus::Histogram& collection_duration_;
  std::vector<prometheus::Family<prometheus::Counter>*> nic_families_;
  prometheus::Family<prometheus::Counter>& pfc_pause_duration_;
  prometheus::Family<prometheus::Counter>& pfc_pause_frames_;
  prometheus::Family<prometheus::Gauge>& missing_counters_;

  absl::Mutex mu_;
  std::map<std::pair<std::string, uint32_t>, NicSeries> nics_ ABSL_GUARDED_BY(mu_);
  // netdev and PCI address by (device, port), from AddNic(const Nic&).
  std::map<std::pair<std::string, uint32_t>, std::pair<std::string, std::string>> nic_ids_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_AGENT_METRICS_H_
