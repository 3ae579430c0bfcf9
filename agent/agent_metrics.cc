#include "agent/agent_metrics.h"

#include "absl/strings/str_cat.h"

namespace weft::agent {
namespace {

struct NicCounterSpec {
  const char* name;
  const char* help;
  RawNicCounters::Value RawNicCounters::*field;
};

const NicCounterSpec kNicCounters[] = {
    {"weft_nic_port_xmit_bytes_total", "Bytes transmitted (sysfs port_xmit_data x 4).",
     &RawNicCounters::port_xmit_bytes},
    {"weft_nic_port_rcv_bytes_total", "Bytes received (sysfs port_rcv_data x 4).",
     &RawNicCounters::port_rcv_bytes},
    {"weft_nic_port_xmit_packets_total", "Packets transmitted (port_xmit_packets).",
     &RawNicCounters::port_xmit_packets},
    {"weft_nic_port_rcv_packets_total", "Packets received (port_rcv_packets).",
     &RawNicCounters::port_rcv_packets},
    {"weft_nic_unicast_xmit_packets_total", "Unicast packets transmitted (unicast_xmit_packets).",
     &RawNicCounters::unicast_xmit_packets},
    {"weft_nic_unicast_rcv_packets_total", "Unicast packets received (unicast_rcv_packets).",
     &RawNicCounters::unicast_rcv_packets},
    {"weft_nic_multicast_xmit_packets_total",
     "Multicast packets transmitted (multicast_xmit_packets).",
     &RawNicCounters::multicast_xmit_packets},
    {"weft_nic_multicast_rcv_packets_total", "Multicast packets received (multicast_rcv_packets).",
     &RawNicCounters::multicast_rcv_packets},
    {"weft_nic_port_xmit_discards_total", "Outbound packets discarded (port_xmit_discards).",
     &RawNicCounters::port_xmit_discards},
    {"weft_nic_port_rcv_errors_total", "Received packets with errors (port_rcv_errors).",
     &RawNicCounters::port_rcv_errors},
    {"weft_nic_link_downed_total", "Times the link went down (link_downed).",
     &RawNicCounters::link_downed},
    {"weft_nic_symbol_error_total", "Physical symbol errors (symbol_error).",
     &RawNicCounters::symbol_error},
    {"weft_nic_link_error_recovery_total", "Link error recoveries (link_error_recovery).",
     &RawNicCounters::link_error_recovery},
    {"weft_nic_port_xmit_wait_total",
     "Ticks the port had data to send and could not (port_xmit_wait; saturates on some NICs).",
     &RawNicCounters::port_xmit_wait},
    {"weft_nic_np_ecn_marked_roce_packets_total",
     "RoCEv2 packets received with ECN CE marks (np_ecn_marked_roce_packets).",
     &RawNicCounters::np_ecn_marked_roce_packets},
    {"weft_nic_np_cnp_sent_total", "CNPs sent as notification point (np_cnp_sent).",
     &RawNicCounters::np_cnp_sent},
    {"weft_nic_rp_cnp_handled_total", "CNPs the reaction point acted on (rp_cnp_handled).",
     &RawNicCounters::rp_cnp_handled},
    {"weft_nic_rp_cnp_ignored_total",
     "CNPs received and ignored; rising means congestion control is off (rp_cnp_ignored).",
     &RawNicCounters::rp_cnp_ignored},
    {"weft_nic_cc_rx_ce_pkts_total", "CE-marked packets received (optional cc_rx_ce_pkts).",
     &RawNicCounters::cc_rx_ce_pkts},
    {"weft_nic_cc_rx_cnp_pkts_total", "CNPs received (optional cc_rx_cnp_pkts).",
     &RawNicCounters::cc_rx_cnp_pkts},
    {"weft_nic_cc_tx_cnp_pkts_total", "CNPs sent (optional cc_tx_cnp_pkts).",
     &RawNicCounters::cc_tx_cnp_pkts},
    {"weft_nic_out_of_sequence_total", "Out-of-sequence packets received (out_of_sequence).",
     &RawNicCounters::out_of_sequence},
    {"weft_nic_packet_seq_err_total", "NAKs for sequence errors received (packet_seq_err).",
     &RawNicCounters::packet_seq_err},
    {"weft_nic_local_ack_timeout_err_total",
     "Requester ACK timer expirations (local_ack_timeout_err).",
     &RawNicCounters::local_ack_timeout_err},
    {"weft_nic_rnr_nak_retry_err_total", "RNR NAKs received (rnr_nak_retry_err).",
     &RawNicCounters::rnr_nak_retry_err},
    {"weft_nic_implied_nak_seq_err_total", "Implied NAK sequence errors (implied_nak_seq_err).",
     &RawNicCounters::implied_nak_seq_err},
    {"weft_nic_duplicate_request_total", "Duplicate requests received (duplicate_request).",
     &RawNicCounters::duplicate_request},
    {"weft_nic_out_of_buffer_total", "Packets dropped for lack of a receive WQE (out_of_buffer).",
     &RawNicCounters::out_of_buffer},
    {"weft_nic_rdma_tx_packets_total", "RDMA packets transmitted (optional rdma_tx_packets).",
     &RawNicCounters::rdma_tx_packets},
    {"weft_nic_rdma_tx_bytes_total", "RDMA bytes transmitted (optional rdma_tx_bytes).",
     &RawNicCounters::rdma_tx_bytes},
    {"weft_nic_rdma_rx_packets_total", "RDMA packets received (optional rdma_rx_packets).",
     &RawNicCounters::rdma_rx_packets},
    {"weft_nic_rdma_rx_bytes_total", "RDMA bytes received (optional rdma_rx_bytes).",
     &RawNicCounters::rdma_rx_bytes},
};

prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& registry,
                                                       const std::string& name,
                                                       const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

}  // namespace

AgentMetrics::AgentMetrics(prometheus::Registry& registry, std::string node_name)
    : node_name_(std::move(node_name)),
      batches_sent_(CounterFamily(registry, "weft_agent_telemetry_batches_sent_total",
                                  "TelemetryBatch messages written to the controller stream.")
                        .Add({})),
      send_errors_(CounterFamily(registry, "weft_agent_telemetry_send_errors_total",
                                 "TelemetryBatch writes the controller stream refused.")
                       .Add({})),
      telemetry_dropped_(CounterFamily(registry, "weft_agent_telemetry_dropped_total",
                                       "TelemetryBatch messages dropped unsent, oldest "
                                       "first, because the controller stream was slower "
                                       "than collection (acks are never dropped).")
                             .Add({})),
      reconnects_(CounterFamily(registry, "weft_agent_reconnects_total",
                                "Attempts to re-establish the controller session after a "
                                "failure.")
                      .Add({})),
      messages_fenced_(CounterFamily(registry, "weft_agent_controller_messages_fenced_total",
                                     "Controller messages ignored because they came from a "
                                     "deposed leader (an epoch below the highest seen).")
                           .Add({})),
      registered_(prometheus::BuildGauge()
                      .Name("weft_agent_registered")
                      .Help("1 while registered with the controller and streaming, else 0.")
                      .Register(registry)
                      .Add({})),
      tunables_applied_version_(
          prometheus::BuildGauge()
              .Name("weft_agent_tunables_applied_version")
              .Help("Version of the desired QoS/DCQCN state applied to the NICs (0: none).")
              .Register(registry)
              .Add({})),
      tunables_drift_(prometheus::BuildGauge()
                          .Name("weft_agent_tunables_drift")
                          .Help("Tunables that differ from the applied desired state, at the "
                                "last telemetry cycle (one per NIC and parameter).")
                          .Register(registry)
                          .Add({})),
      applies_(CounterFamily(registry, "weft_agent_desired_state_applies_total",
                             "Desired states answered: result=ack (applied) or nack.")),
      applies_ack_(applies_.Add({{"result", "ack"}})),
      applies_nack_(applies_.Add({{"result", "nack"}})),
      collection_errors_(CounterFamily(registry, "weft_agent_collection_errors_total",
                                       "NIC counter readings that failed, by device.")),
      collection_duration_(
          prometheus::BuildHistogram()
              .Name("weft_agent_collection_duration_seconds")
              .Help("Time to read every NIC's counters and compute rates, per collection.")
              .Register(registry)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001,
                                                               0.0025, 0.005, 0.01, 0.025, 0.05,
                                                               0.1})),
      pfc_pause_duration_(CounterFamily(
          registry, "weft_nic_pfc_pause_duration_seconds_total",
          "Time in PFC pause (ethtool {rx,tx}_prio{p}_pause_duration): rx = this port was "
          "paused, tx = this port paused its peer.")),
      pfc_pause_frames_(CounterFamily(registry, "weft_nic_pfc_pause_frames_total",
                                      "PFC pause frames (ethtool {rx,tx}_prio{p}_pause).")),
      missing_counters_(prometheus::BuildGauge()
                            .Name("weft_nic_missing_counters")
                            .Help("Counters the port is expected to have and cannot report "
                                  "(no file, unreadable, 'N/A (no PMA)', not a number); 0 "
                                  "when it reports them all. weft-agent inspect names them.")
                            .Register(registry)) {
  for (const NicCounterSpec& spec : kNicCounters) {
    nic_families_.push_back(&CounterFamily(registry, spec.name, spec.help));
  }
}

void AgentMetrics::CollectionError(const std::string& device) {
  collection_errors_.Add({{"device", device}}).Increment();
}

AgentMetrics::NicSeries& AgentMetrics::SeriesFor(const std::string& device, uint32_t port) {
  auto [it, inserted] = nics_.try_emplace({device, port});
  if (inserted) {
    prometheus::Labels labels = {
        {"node", node_name_}, {"device", device}, {"port", absl::StrCat(port)}};
    if (auto ids = nic_ids_.find({device, port}); ids != nic_ids_.end()) {
      labels["netdev"] = ids->second.first;
      labels["pci"] = ids->second.second;
    }
    it->second.labels = labels;
    it->second.counters.assign(nic_families_.size(), nullptr);
  }
  return it->second;
}

AgentMetrics::PfcSeries& AgentMetrics::PfcSeriesFor(const std::string& device, uint32_t port,
                                                    uint32_t priority, NicSeries& nic) {
  auto [it, inserted] = nic.pfc.try_emplace(priority);
  if (inserted) {
    auto labels = [&](const char* direction) -> prometheus::Labels {
      prometheus::Labels l = {{"node", node_name_},
                              {"device", device},
                              {"port", absl::StrCat(port)},
                              {"direction", direction},
                              {"priority", absl::StrCat(priority)}};
      if (auto ids = nic_ids_.find({device, port}); ids != nic_ids_.end()) {
        l["netdev"] = ids->second.first;
        l["pci"] = ids->second.second;
      }
      return l;
    };
    it->second =
        PfcSeries{&pfc_pause_frames_.Add(labels("rx")), &pfc_pause_frames_.Add(labels("tx")),
                  &pfc_pause_duration_.Add(labels("rx")), &pfc_pause_duration_.Add(labels("tx"))};
  }
  return it->second;
}

void AgentMetrics::AddNic(const weft::v1::Nic& nic) {
  {
    absl::MutexLock lock(&mu_);
    nic_ids_[{nic.device(), nic.port()}] = {nic.netdev(), nic.pci_address()};
  }
  AddNic(nic.device(), nic.port());
}

void AgentMetrics::AddNic(const std::string& device, uint32_t port) {
  collection_errors_.Add({{"device", device}});
  absl::MutexLock lock(&mu_);
  SeriesFor(device, port);
}

void AgentMetrics::SetMissingCounters(const std::string& device, uint32_t port,
                                      size_t missing) {
  absl::MutexLock lock(&mu_);
  NicSeries& nic = SeriesFor(device, port);
  if (nic.missing == nullptr) nic.missing = &missing_counters_.Add(nic.labels);
  nic.missing->Set(static_cast<double>(missing));
}

void AgentMetrics::AddNicIncrease(const std::string& device, uint32_t port,
                                  const RawNicCounters& increase) {
  absl::MutexLock lock(&mu_);
  NicSeries& nic = SeriesFor(device, port);
  for (size_t i = 0; i < nic.counters.size(); ++i) {
    const RawNicCounters::Value& value = increase.*kNicCounters[i].field;
    if (!value.has_value()) continue;  // a counter the port lacks has no series
    if (nic.counters[i] == nullptr) nic.counters[i] = &nic_families_[i]->Add(nic.labels);
    nic.counters[i]->Increment(static_cast<double>(*value));
  }
  for (const RawPfcCounters& p : increase.pfc) {
    PfcSeries& series = PfcSeriesFor(device, port, p.priority, nic);
    series.rx_frames->Increment(static_cast<double>(p.rx_pause));
    series.tx_frames->Increment(static_cast<double>(p.tx_pause));
    series.rx_duration_us->Increment(static_cast<double>(p.rx_pause_duration_us) / 1e6);
    series.tx_duration_us->Increment(static_cast<double>(p.tx_pause_duration_us) / 1e6);
  }
}

}  // namespace weft::agent
