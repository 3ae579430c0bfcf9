#include "agent/counter_math.h"

#include <vector>

#include "absl/time/time.h"

namespace weft::agent {
namespace {

using weft::v1::Counter;
using weft::v1::NicSample;
using weft::v1::PriorityPfcCounters;

constexpr uint64_t k32BitRange = uint64_t{1} << 32;

// Where each raw counter goes in the sample, and how wide the hardware counter is. A
// counter the reading lacks stays unset in the sample (its group message too, when the
// whole group is absent), never zero.
struct ScalarCounter {
  RawNicCounters::Value RawNicCounters::*field;
  CounterWidth width;
  Counter* (*mutable_counter)(NicSample*);
};

constexpr CounterWidth k32 = CounterWidth::k32Bits;
constexpr CounterWidth k64 = CounterWidth::k64Bits;

// One row per counter: the raw field, its width, and its sample field (group, name).
#define WEFT_COUNTER(field, group, name, width)                                     \
  {                                                                                  \
    &RawNicCounters::field, width,                                                   \
        [](NicSample* s) { return s->mutable_##group()->mutable_##name(); }          \
  }

const ScalarCounter kScalarCounters[] = {
    WEFT_COUNTER(port_xmit_bytes, port_counters, xmit_bytes, k64),
    WEFT_COUNTER(port_rcv_bytes, port_counters, rcv_bytes, k64),
    WEFT_COUNTER(port_xmit_packets, port_counters, xmit_packets, k64),
    WEFT_COUNTER(port_rcv_packets, port_counters, rcv_packets, k64),
    WEFT_COUNTER(unicast_xmit_packets, port_counters, unicast_xmit_packets, k64),
    WEFT_COUNTER(unicast_rcv_packets, port_counters, unicast_rcv_packets, k64),
    WEFT_COUNTER(multicast_xmit_packets, port_counters, multicast_xmit_packets, k64),
    WEFT_COUNTER(multicast_rcv_packets, port_counters, multicast_rcv_packets, k64),
    WEFT_COUNTER(port_xmit_discards, port_counters, xmit_discards, k64),
    WEFT_COUNTER(port_rcv_errors, port_counters, rcv_errors, k64),
    WEFT_COUNTER(link_downed, port_counters, link_downed, k64),
    WEFT_COUNTER(symbol_error, port_counters, symbol_error, k64),
    WEFT_COUNTER(link_error_recovery, port_counters, link_error_recovery, k64),
    WEFT_COUNTER(port_xmit_wait, port_counters, xmit_wait, k64),
    WEFT_COUNTER(np_ecn_marked_roce_packets, congestion, np_ecn_marked_roce_packets, k64),
    WEFT_COUNTER(np_cnp_sent, congestion, np_cnp_sent, k64),
    WEFT_COUNTER(rp_cnp_handled, congestion, rp_cnp_handled, k64),
    WEFT_COUNTER(rp_cnp_ignored, congestion, rp_cnp_ignored, k64),
    WEFT_COUNTER(cc_rx_ce_pkts, congestion, cc_rx_ce_pkts, k64),
    WEFT_COUNTER(cc_rx_cnp_pkts, congestion, cc_rx_cnp_pkts, k64),
    WEFT_COUNTER(cc_tx_cnp_pkts, congestion, cc_tx_cnp_pkts, k64),
    WEFT_COUNTER(out_of_sequence, retransmission, out_of_sequence, k32),
    WEFT_COUNTER(packet_seq_err, retransmission, packet_seq_err, k32),
    WEFT_COUNTER(local_ack_timeout_err, retransmission, local_ack_timeout_err, k32),
    WEFT_COUNTER(rnr_nak_retry_err, retransmission, rnr_nak_retry_err, k32),
    WEFT_COUNTER(implied_nak_seq_err, retransmission, implied_nak_seq_err, k32),
    WEFT_COUNTER(duplicate_request, retransmission, duplicate_request, k32),
    WEFT_COUNTER(out_of_buffer, retransmission, out_of_buffer, k32),
    WEFT_COUNTER(rdma_tx_packets, rdma_traffic, tx_packets, k64),
    WEFT_COUNTER(rdma_tx_bytes, rdma_traffic, tx_bytes, k64),
    WEFT_COUNTER(rdma_rx_packets, rdma_traffic, rx_packets, k64),
    WEFT_COUNTER(rdma_rx_bytes, rdma_traffic, rx_bytes, k64),
};

#undef WEFT_COUNTER

// ethtool's per-priority counters are 64-bit.
struct PfcCounter {
  uint64_t RawPfcCounters::*field;
  Counter* (*mutable_counter)(PriorityPfcCounters*);
};

const PfcCounter kPfcCounters[] = {
    {&RawPfcCounters::rx_pause, [](PriorityPfcCounters* p) { return p->mutable_rx_pause(); }},
    {&RawPfcCounters::tx_pause, [](PriorityPfcCounters* p) { return p->mutable_tx_pause(); }},
    {&RawPfcCounters::rx_pause_duration_us,
     [](PriorityPfcCounters* p) { return p->mutable_rx_pause_duration_us(); }},
    {&RawPfcCounters::tx_pause_duration_us,
     [](PriorityPfcCounters* p) { return p->mutable_tx_pause_duration_us(); }},
};

const RawPfcCounters* FindPriority(const std::vector<RawPfcCounters>& pfc, uint32_t priority) {
  for (const RawPfcCounters& p : pfc) {
    if (p.priority == priority) return &p;
  }
  return nullptr;
}

}  // namespace

std::optional<uint64_t> CounterIncrease(uint64_t previous, uint64_t current, CounterWidth width) {
  if (current >= previous) return current - previous;
  if (width == CounterWidth::k64Bits) return std::nullopt;
  // Values that do not fit in 32 bits cannot come from a 32-bit counter: be strict.
  if (previous >= k32BitRange || current >= k32BitRange) return std::nullopt;
  const uint64_t wrapped = k32BitRange - previous + current;
  // A reset from a small value would look like a wrap of almost 2^32: no counter on a
  // NIC advances by more than half its range in one interval, so call that a reset.
  if (wrapped >= k32BitRange / 2) return std::nullopt;
  return wrapped;
}

NicUpdate ComputeNicUpdate(const RawNicReading* previous, const RawNicReading& current) {
  NicUpdate update;
  NicSample& sample = update.sample;
  sample.set_device(current.device);
  sample.set_port(current.port);
  sample.set_timestamp_us(absl::ToUnixMicros(current.timestamp));
  sample.set_port_state(static_cast<uint32_t>(current.port_state));
  sample.set_rates_valid(false);
  for (const std::string& warning : current.warnings) sample.add_warnings(warning);
  for (const std::string& missing : current.missing_counters) sample.add_missing_counters(missing);
  if (!current.error.empty()) {
    sample.set_error(current.error);
    return update;
  }

  const RawNicCounters& cur = current.counters;
  for (const ScalarCounter& c : kScalarCounters) {
    if ((cur.*c.field).has_value()) c.mutable_counter(&sample)->set_total(*(cur.*c.field));
  }
  for (const RawPfcCounters& p : cur.pfc) {
    PriorityPfcCounters* out = sample.add_pfc();
    out->set_priority(p.priority);
    for (const PfcCounter& c : kPfcCounters) c.mutable_counter(out)->set_total(p.*c.field);
  }

  if (previous == nullptr || !previous->error.empty() || previous->device != current.device ||
      previous->port != current.port) {
    return update;
  }
  const absl::Duration elapsed = current.timestamp - previous->timestamp;
  if (elapsed <= absl::ZeroDuration()) return update;

  const RawNicCounters& prev = previous->counters;
  RawNicCounters increase;
  for (const ScalarCounter& c : kScalarCounters) {
    // A counter that appeared or vanished between the readings has no increase.
    if (!(cur.*c.field).has_value() || !(prev.*c.field).has_value()) continue;
    const std::optional<uint64_t> inc =
        CounterIncrease(*(prev.*c.field), *(cur.*c.field), c.width);
    if (!inc.has_value()) return update;  // reset: no rate from this pair
    increase.*c.field = *inc;
  }
  // Priorities that only just appeared have no increase (and a 0 rate) yet.
  std::vector<bool> has_increase(cur.pfc.size(), false);
  for (size_t i = 0; i < cur.pfc.size(); ++i) {
    const RawPfcCounters* before = FindPriority(prev.pfc, cur.pfc[i].priority);
    if (before == nullptr) continue;
    RawPfcCounters inc_p;
    inc_p.priority = cur.pfc[i].priority;
    for (const PfcCounter& c : kPfcCounters) {
      const std::optional<uint64_t> inc =
          CounterIncrease(before->*c.field, cur.pfc[i].*c.field, CounterWidth::k64Bits);
      if (!inc.has_value()) return update;
      inc_p.*c.field = *inc;
    }
    increase.pfc.push_back(inc_p);
    has_increase[i] = true;
  }

  const double seconds = absl::ToDoubleSeconds(elapsed);
  for (const ScalarCounter& c : kScalarCounters) {
    // A counter that only just appeared keeps per_second 0 until the next reading.
    if (!(increase.*c.field).has_value()) continue;
    c.mutable_counter(&sample)->set_per_second(static_cast<double>(*(increase.*c.field)) /
                                               seconds);
  }
  size_t next_increase = 0;
  for (size_t i = 0; i < cur.pfc.size(); ++i) {
    if (!has_increase[i]) continue;
    const RawPfcCounters& inc_p = increase.pfc[next_increase++];
    for (const PfcCounter& c : kPfcCounters) {
      c.mutable_counter(sample.mutable_pfc(static_cast<int>(i)))
          ->set_per_second(static_cast<double>(inc_p.*c.field) / seconds);
    }
  }
  sample.set_rates_valid(true);
  update.increase = std::move(increase);
  return update;
}

}  // namespace weft::agent
