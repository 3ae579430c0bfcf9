#include "agent/host_counters.h"

#include "absl/strings/strip.h"

namespace weft::agent {
namespace {

constexpr HostCounterSpec kHostCounters[] = {
    {"port_xmit_data", &RawNicCounters::port_xmit_bytes, CounterGroup::kPort,
     "port_xmit_data_64", true},
    {"port_rcv_data", &RawNicCounters::port_rcv_bytes, CounterGroup::kPort, "port_rcv_data_64",
     true},
    {"port_xmit_packets", &RawNicCounters::port_xmit_packets, CounterGroup::kPort,
     "port_xmit_packets_64"},
    {"port_rcv_packets", &RawNicCounters::port_rcv_packets, CounterGroup::kPort,
     "port_rcv_packets_64"},
    {"unicast_xmit_packets", &RawNicCounters::unicast_xmit_packets, CounterGroup::kPort,
     "port_unicast_xmit_packets"},
    {"unicast_rcv_packets", &RawNicCounters::unicast_rcv_packets, CounterGroup::kPort,
     "port_unicast_rcv_packets"},
    {"multicast_xmit_packets", &RawNicCounters::multicast_xmit_packets, CounterGroup::kPort,
     "port_multicast_xmit_packets"},
    {"multicast_rcv_packets", &RawNicCounters::multicast_rcv_packets, CounterGroup::kPort,
     "port_multicast_rcv_packets"},
    {"port_xmit_discards", &RawNicCounters::port_xmit_discards, CounterGroup::kPort},
    {"port_rcv_errors", &RawNicCounters::port_rcv_errors, CounterGroup::kPort},
    {"link_downed", &RawNicCounters::link_downed, CounterGroup::kPort},
    {"symbol_error", &RawNicCounters::symbol_error, CounterGroup::kPort},
    {"link_error_recovery", &RawNicCounters::link_error_recovery, CounterGroup::kPort},
    {"port_xmit_wait", &RawNicCounters::port_xmit_wait, CounterGroup::kPort},
    {"np_ecn_marked_roce_packets", &RawNicCounters::np_ecn_marked_roce_packets,
     CounterGroup::kCongestion},
    {"np_cnp_sent", &RawNicCounters::np_cnp_sent, CounterGroup::kCongestion},
    {"rp_cnp_handled", &RawNicCounters::rp_cnp_handled, CounterGroup::kCongestion},
    {"rp_cnp_ignored", &RawNicCounters::rp_cnp_ignored, CounterGroup::kCongestion},
    {"out_of_sequence", &RawNicCounters::out_of_sequence, CounterGroup::kRetransmission},
    {"packet_seq_err", &RawNicCounters::packet_seq_err, CounterGroup::kRetransmission},
    {"local_ack_timeout_err", &RawNicCounters::local_ack_timeout_err,
     CounterGroup::kRetransmission},
    {"rnr_nak_retry_err", &RawNicCounters::rnr_nak_retry_err, CounterGroup::kRetransmission},
    {"implied_nak_seq_err", &RawNicCounters::implied_nak_seq_err, CounterGroup::kRetransmission},
    {"duplicate_request", &RawNicCounters::duplicate_request, CounterGroup::kRetransmission},
    {"out_of_buffer", &RawNicCounters::out_of_buffer, CounterGroup::kRetransmission},
    {"cc_rx_ce_pkts", &RawNicCounters::cc_rx_ce_pkts, CounterGroup::kOptional},
    {"cc_rx_cnp_pkts", &RawNicCounters::cc_rx_cnp_pkts, CounterGroup::kOptional},
    {"cc_tx_cnp_pkts", &RawNicCounters::cc_tx_cnp_pkts, CounterGroup::kOptional},
    {"rdma_tx_packets", &RawNicCounters::rdma_tx_packets, CounterGroup::kOptional},
    {"rdma_tx_bytes", &RawNicCounters::rdma_tx_bytes, CounterGroup::kOptional},
    {"rdma_rx_packets", &RawNicCounters::rdma_rx_packets, CounterGroup::kOptional},
    {"rdma_rx_bytes", &RawNicCounters::rdma_rx_bytes, CounterGroup::kOptional},
};

}  // namespace

absl::Span<const HostCounterSpec> HostCounterSpecs() { return kHostCounters; }

bool ExpectedOnPort(const HostCounterSpec& spec, bool has_hw_counters, bool is_roce) {
  switch (spec.group) {
    case CounterGroup::kPort:
      return true;
    case CounterGroup::kRetransmission:
      return has_hw_counters;
    case CounterGroup::kCongestion:
      return has_hw_counters && is_roce;
    case CounterGroup::kOptional:
      return false;
  }
  return false;
}

void SetHostCounter(const HostCounterSpec& spec, uint64_t host_value, RawNicCounters* counters) {
  counters->*spec.field = spec.four_octet_words ? host_value * 4 : host_value;
}

bool IsRoceLinkLayer(absl::string_view link_layer) {
  return link_layer.empty() || link_layer == "Ethernet";
}

void AddPfcStatistic(absl::string_view name, uint64_t value,
                     std::map<uint32_t, RawPfcCounters>* by_priority) {
  absl::string_view rest = name;
  const bool rx = absl::ConsumePrefix(&rest, "rx_prio");
  if (!rx && !absl::ConsumePrefix(&rest, "tx_prio")) return;
  if (rest.size() < 2 || rest[0] < '0' || rest[0] > '7') return;
  const uint32_t priority = rest[0] - '0';
  rest.remove_prefix(1);
  if (rest == "_pause") {
    RawPfcCounters& c = (*by_priority)[priority];
    c.priority = priority;
    (rx ? c.rx_pause : c.tx_pause) = value;
  } else if (rest == "_pause_duration") {
    RawPfcCounters& c = (*by_priority)[priority];
    c.priority = priority;
    (rx ? c.rx_pause_duration_us : c.tx_pause_duration_us) = value;
  }
}

}  // namespace weft::agent
